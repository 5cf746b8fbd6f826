"""EventGate: which interface uevents poll early (issue #43 item 2)."""

from nicwatch.collect import Selection
from nicwatch.sources.udev import EARLY_POLL_GAP, EventGate, NetEvent


def test_unselected_interfaces_are_ignored_and_ask_for_nothing():
    gate = EventGate()
    sel = Selection(include="va0")
    kept = gate.offer([NetEvent("add", f"pod{i}", virtual=True) for i in range(50)], sel.selects)
    assert kept == [] and gate.counts == {"taken": 0, "coalesced": 0, "ignored": 50}
    assert gate.due(100.0, 5.0) is None


def test_a_burst_of_selected_events_is_one_early_poll():
    gate = EventGate()
    sel = Selection(include="va.*")
    kept = gate.offer([NetEvent("add", f"va{i}", virtual=True) for i in range(1, 21)],
                      sel.selects)
    assert len(kept) == 20 and gate.counts == {"taken": 1, "coalesced": 19, "ignored": 0}
    assert gate.due(100.0, 5.0) == 100.0 + EARLY_POLL_GAP  # a second after the last poll
    assert gate.due(100.0, 0.2) == 100.2  # never later than the schedule's own next slot
    gate.polled()
    assert gate.due(101.0, 5.0) is None
    gate.offer([NetEvent("remove", "va3", virtual=True)], sel.selects)
    assert gate.counts["taken"] == 2  # a new event after the poll asks again


def test_default_selection_and_renames_decide_on_the_event_alone():
    gate = EventGate()
    sel = Selection()  # device-backed interfaces only
    gate.offer([NetEvent("add", "veth1", virtual=True),  # software: not selected
                NetEvent("remove", "eth1", virtual=False),  # gone, but was a NIC
                ], sel.selects)
    assert gate.counts == {"taken": 1, "coalesced": 0, "ignored": 1}
    gate = EventGate()
    # renamed out of the selection: the old name was served, so its series must go now
    gate.offer([NetEvent("move", "other0", old_name="va0", virtual=True)],
               Selection(include="va0").selects)
    assert gate.counts["taken"] == 1
