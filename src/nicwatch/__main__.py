from nicwatch.cli import main

raise SystemExit(main())
