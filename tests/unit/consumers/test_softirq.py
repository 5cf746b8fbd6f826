from nicwatch.collect import Collector
from nicwatch.consumers.softirq import SoftirqLoad
from nicwatch.sources.host import read_softirq_seconds

from fixture_ethtool import RecordedEthtool
from paths import SYSFS


def test_local_cpu_softirq_ratios_from_the_nics_local_cpulist():
    samples = Collector(SYSFS / "mlx5-rdma", ioctl=RecordedEthtool({})).poll().samples
    local = samples[0].local_cpus
    assert local  # the fixture's function lists its local CPUs
    ncpu = max(local) + 2
    load = SoftirqLoad()
    load.update(10.0, tuple(0.0 for _ in range(ncpu)))
    assert load.family(samples).series == ()  # one reading is no rate
    busy = [0.0] * ncpu
    busy[local[0]] = 4.5  # 4.5 s of softirq in 5 s
    load.update(15.0, tuple(busy))
    got = dict(load.family(samples).series)
    dev = (("device", "enp33s0f0np0"),)
    assert got[dev + (("stat", "max"),)] == 0.9
    assert abs(got[dev + (("stat", "mean"),)] - 0.9 / len(local)) < 1e-12


def test_real_per_cpu_softirq_times_are_read():
    times = read_softirq_seconds()
    assert len(times) >= 1 and all(t >= 0 for t in times)


def test_the_squeezed_serving_cpus_are_summarised_per_nic(tmp_path):
    """nic_rx_cpu_squeezed_softirq_ratio: the softirq share of the serving CPUs whose
    time_squeeze rose (not of a busier one that keeps up); nic_rx_cpus_squeezed and
    nic_rx_cpus_dropping count them: the per-CPU series summarised a port, at the default
    --collector.detail."""
    from nicwatch.demo.simulate import Simulation, demo_ports
    from nicwatch.model import SeriesKey
    from nicwatch.tracker import Tracked, TrackedSample

    sim = Simulation(demo_ports(4), seed=1)
    sim.write_sysfs(tmp_path / "sys")
    sim.write_procfs(tmp_path / "proc")
    collector = Collector(tmp_path / "sys", procfs=tmp_path / "proc",
                          ioctl=RecordedEthtool({}))
    try:
        sample = next(s for s in collector.poll().samples if s.rx_cpus)
    finally:
        collector.close()
    first, second = sample.rx_cpus[:2]
    load = SoftirqLoad()
    load.update(10.0, tuple(0.0 for _ in range(max(first, second) + 1)))
    ratios = [0.0] * (max(first, second) + 1)
    ratios[first], ratios[second] = 0.6 * 5, 0.95 * 5  # 5 s between the readings
    load.update(15.0, tuple(ratios))

    def tracked(squeeze: dict[int, float], dropped: dict[int, float]) -> TrackedSample:
        counters = {SeriesKey(name, (("cpu", str(cpu)),)): Tracked(100.0, rate, None)
                    for name, rates in (("nic_rx_cpu_time_squeeze_total", squeeze),
                                        ("nic_rx_cpu_dropped_total", dropped))
                    for cpu, rate in rates.items()}
        return TrackedSample(sample, counters, {})

    dev = (("device", sample.identity.device),)

    def summary(ts: TrackedSample) -> dict[str, float]:
        return {f.name: dict(f.series)[dev] for f in load.squeezed_families([ts])}

    # the 60 % CPU squeezes, the 95 % one keeps up: 0.6, not 0.95
    got = summary(tracked({first: 6.0, second: 0.0}, {first: 0.0, second: None}))
    assert abs(got["nic_rx_cpu_squeezed_softirq_ratio"] - 0.6) < 1e-12
    assert got["nic_rx_cpus_squeezed"] == 1 and got["nic_rx_cpus_dropping"] == 0
    got = summary(tracked({first: 6.0, second: 2.0}, {first: 1.0, second: 3.0}))
    assert abs(got["nic_rx_cpu_squeezed_softirq_ratio"] - 0.95) < 1e-12
    assert got["nic_rx_cpus_squeezed"] == 2 and got["nic_rx_cpus_dropping"] == 2
    # nothing squeezed (or the first poll: no rates): 0
    got = summary(tracked({first: None, second: 0.0}, {}))
    assert got == {"nic_rx_cpu_squeezed_softirq_ratio": 0.0, "nic_rx_cpus_squeezed": 0,
                   "nic_rx_cpus_dropping": 0}
