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
