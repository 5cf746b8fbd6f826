from nicwatch.cli.main import main

raise SystemExit(main())
