"""Unit tests of the ETTR simulator (sim.py): run by CTest as ettr_sim_unit."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim  # noqa: E402

DAY = 86400.0


def fixed(r, **kw):
    """A scenario whose every action takes r seconds: the closed form's assumption."""
    return sim.Scenario("fixed", {sim.REBOOT: r, sim.REPLACE: r, sim.RESTART: r}, **kw)


class EttrTest(unittest.TestCase):
    def test_no_failures_is_one_minus_checkpoint_overhead(self):
        sc = fixed(60.0, stall_s=30.0, durable_after_s=100.0)
        interval = 1800.0
        # A whole number of checkpoint periods, so no partial period at the end.
        r = sim.simulate(sc, interval, 0.0, 1000 * (interval + 30.0), seed=1)
        self.assertAlmostEqual(r["ettr"], 1 - 30.0 / (interval + 30.0), places=12)
        self.assertEqual(r["n_failures"], 0)

    def test_matches_closed_form_within_one_percent(self):
        rate = 1 / (4 * 3600.0)  # a failure every 4 h, job-wide
        cases = [(3600.0, 0.0, 0.0, 300.0), (1800.0, 60.0, 120.0, 600.0), (600.0, 5.0, 0.0, 1.4)]
        for interval, stall, durable, rec in cases:
            sc = fixed(rec, stall_s=stall, durable_after_s=durable)
            got, _ = sim.mean_ettr(sc, interval, rate, 2000 * DAY, seeds=range(3))
            want = sim.closed_form_ettr(interval, stall, durable, rec, rate)
            with self.subTest(interval=interval, stall=stall):
                self.assertLess(abs(got - want) / want, 0.01, (got, want))
        # The closed form itself against the first-order 1 / (1 + rate (R + T/2)).
        t, r = 600.0, 1.4
        first = 1 / (1 + rate * (r + t / 2))
        self.assertLess(abs(sim.closed_form_ettr(t, 0, 0, r, rate) - first) / first, 0.001)

    def test_young_daly_interval_within_one_grid_step(self):
        stall, mtbf, step = 60.0, DAY, 300.0  # delta << M: first order holds
        sc = fixed(60.0, stall_s=stall)
        grid = [step * i for i in range(2, 25)]
        best, _, curve = sim.best_interval(sc, grid, 1 / mtbf, 20000 * DAY, seeds=[7])
        yd = sim.young_daly(stall, mtbf)
        self.assertEqual(len(curve), len(grid))
        self.assertLessEqual(abs(best - yd), step, (best, yd))

    def test_seeded_runs_are_deterministic(self):
        sc = fixed(120.0, stall_s=10.0, durable_after_s=20.0)
        a = sim.simulate(sc, 900.0, 1 / 3600.0, 30 * DAY, seed=42)
        b = sim.simulate(sc, 900.0, 1 / 3600.0, 30 * DAY, seed=42)
        c = sim.simulate(sc, 900.0, 1 / 3600.0, 30 * DAY, seed=43)
        self.assertEqual(a, b)
        self.assertNotEqual(a["ettr"], c["ettr"])

    def test_causes_follow_endures_recovery_policy(self):
        # Mirrors action_for_fault in src/controller/core/recovery_policy.cpp.
        reboot_kinds = {"hang", "slurmd-gone", "fsx-hang", "fsx-error"}
        for cause, _, kind, action in sim.LLAMA3_CAUSES:
            if action == sim.RESTART:
                continue
            want = sim.REBOOT if kind in reboot_kinds else sim.REPLACE
            self.assertEqual(action, want, cause)
        self.assertAlmostEqual(sum(sim.action_shares().values()), 1.0)


if __name__ == "__main__":
    unittest.main()
