"""The one gradient synchronisation: a bucketed sum over ranks, idle ranks included, overlap or not,
fresh or one step stale."""

import pytest
import torch
from torch import nn

from dygsched.engine.gradient_sync import GradientSync
from tests.harness import run_ranks
from tests.models.snapshots import EXACT64

BUCKETS = (25 * 2**20, 1)  # one bucket, or one per parameter


# In float64: the ranks' backward and the expected one run in other processes with other thread
# counts, whose float32 kernels may round differently (within 5x of the 1e-5 once allowed); float64
# leaves rounding at 1e-15, so EXACT64 checks the sum over ranks itself.
def inputs(rank, step):
    return torch.randn(5, 3, generator=torch.Generator().manual_seed(10 * step + rank), dtype=torch.float64)


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).double()


def _rank(rank, out):
    for overlap in (False, True):
        for bucket_bytes in BUCKETS:
            _steps(rank, f"{out}-{overlap}-{bucket_bytes}", overlap, bucket_bytes)
    for bucket_bytes in BUCKETS:
        _steps(rank, f"{out}-stale-{bucket_bytes}", False, bucket_bytes, staleness=1)


def _steps(rank, out, overlap, bucket_bytes, staleness=0):
    net = model()
    sync = GradientSync(net, 2, bucket_bytes=bucket_bytes, overlap=overlap, staleness=staleness)
    assert len(sync.buckets) == (1 if bucket_bytes > 10**6 else len([p for p in net.parameters()]))
    results = []
    for step in range(3):
        if rank == 0 or step == 1:  # rank 1 idles in steps 0 and 2; its parameters get zero gradients
            with sync.final_backward():
                net(inputs(rank, step)).pow(2).sum().backward()
        moved = sync.synchronize()
        results.append(({n: p.grad.clone() for n, p in net.named_parameters()}, net[1].running_mean.clone(), moved))
        sync.zero_grad()
    sync.close()
    torch.save(results, f"{out}-{rank}.pt")


def expected_steps():
    net = model()
    steps = []
    for step in range(3):
        grads = {n: torch.zeros_like(p) for n, p in net.named_parameters()}
        for rank in (0, 1):
            if rank == 0 or step == 1:
                net.zero_grad()
                net(inputs(rank, step)).pow(2).sum().backward()
                for n, p in net.named_parameters():
                    grads[n] += p.grad
        steps.append(grads)
    return steps


@pytest.fixture(scope="module")
def synced(tmp_path_factory):
    """Where the two ranks saved every configuration's steps (one spawn for all of them)."""
    out = tmp_path_factory.mktemp("sync") / "sync"
    run_ranks(_rank, (str(out),))
    return out


def test_gradients_are_summed_over_ranks_with_idle_ranks_and_any_bucketing(synced):
    expected = expected_steps()
    for overlap in (False, True):
        for bucket_bytes in BUCKETS:
            out = f"{synced}-{overlap}-{bucket_bytes}"
            for rank in (0, 1):
                results = torch.load(f"{out}-{rank}.pt")
                for step, (grads, _, moved) in enumerate(results):
                    assert moved > 0
                    for name, value in expected[step].items():
                        torch.testing.assert_close(
                            grads[name],
                            value,
                            **EXACT64,
                            msg=lambda m, where=f"{overlap} {bucket_bytes} {rank} {step} {name}": f"{where}: {m}",
                        )
            # batch-norm statistics are averaged, so both ranks hold the same
            (a, b) = (torch.load(f"{out}-{r}.pt")[-1][1] for r in (0, 1))
            assert torch.equal(a, b)


def test_a_stale_step_applies_the_previous_steps_sum_and_the_first_step_nothing(synced):
    expected = expected_steps()
    for bucket_bytes in BUCKETS:
        for rank in (0, 1):
            results = torch.load(f"{synced}-stale-{bucket_bytes}-{rank}.pt")
            first_grads, _, first_moved = results[0]
            assert first_moved > 0  # buffers only: no gradient sum has arrived yet
            assert all(torch.count_nonzero(g) == 0 for g in first_grads.values())
            for step in (1, 2):
                grads, _, _ = results[step]
                for name, value in expected[step - 1].items():
                    torch.testing.assert_close(
                        grads[name], value, **EXACT64, msg=lambda m, where=f"{bucket_bytes} {rank} {step} {name}": f"{where}: {m}"
                    )


def test_one_rank_moves_nothing_and_fills_unused_gradients_with_zeros():
    net = model()
    sync = GradientSync(net, 1)
    net[0](torch.ones(2, 3, dtype=torch.float64)).sum().backward()  # the other layers get no gradient
    assert sync.synchronize() == 0
    assert all(p.grad is not None for p in net.parameters()) and torch.count_nonzero(net[2].weight.grad) == 0


def test_the_default_bucket_is_the_runs():
    """GradientSync's default (for use outside a run) is the run's grad_sync.bucket_mb default, which the typed run holds."""
    from dygsched.engine.gradient_sync import DEFAULT_BUCKET_BYTES
    from dygsched.launch.compose import compose_run

    assert DEFAULT_BUCKET_BYTES == compose_run([]).grad_sync.bucket_mb * 2**20
