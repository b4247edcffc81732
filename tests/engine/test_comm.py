"""The communication layer: every collective on 2 gloo ranks (plain and device-keyed backend
strings), the backend helpers on device-keyed strings, the process group's backend chosen from the
ranks' physical GPUs (fakes: no GPU needed), the cores shared among a node's ranks, and the rule
that nothing else in the package calls a ``torch.distributed`` collective."""

from __future__ import annotations

import ast
import json
import os
import re
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.multiprocessing as mp

from dygsched.engine import comm
from dygsched.engine.distributed import (
    BackendChoice,
    DistEnv,
    agree_on_backend,
    choose_backend,
    close_process_group,
    init_process_group,
    rank_threads,
    threads_per_rank,
)
from dygsched.errors import ConfigError
from dygsched.launch.local import free_port
from tests.conftest import ROOT

# ---------------------------------------------------------------- backend strings, no process group


@pytest.mark.parametrize(
    ("name", "cpu", "cuda"),
    [
        ("gloo", "gloo", "gloo"),
        ("nccl", None, "nccl"),
        ("cpu:gloo", "gloo", None),
        ("cpu:gloo,cuda:nccl", "gloo", "nccl"),
        ("cuda:nccl,cpu:gloo", "gloo", "nccl"),
        ("cpu:gloo,cuda:gloo", "gloo", "gloo"),
    ],
)
def test_each_device_type_gets_the_backend_its_string_names(name, cpu, cuda):
    assert comm.device_backend("cpu", name) == cpu
    assert comm.device_backend("cuda", name) == cuda
    assert comm.cuda_through_nccl(name) == (cuda == "nccl")


def test_a_cpu_tensor_is_never_staged_through_the_host():
    for name in ("gloo", "cpu:gloo", "cpu:gloo,cuda:nccl"):
        assert not comm.stages_through_host(torch.zeros(3), name)


def test_a_malformed_backend_string_is_refused():
    with pytest.raises(ValueError, match="Invalid device:backend pairing"):
        comm.device_backends("cpu:gloo,cuda")


def test_without_a_process_group_every_call_is_one_rank():
    assert not comm.active() and comm.backend() is None and comm.world_size() == 1 and comm.rank() == 0
    x = torch.arange(4.0)
    assert comm.all_reduce(x.clone()).equal(x)
    assert comm.all_reduce_async(x.clone()).wait().equal(x)
    assert comm.all_to_all(x, [4], [4]).equal(x)
    assert comm.exchange_counts([5]) == [5]
    assert comm.broadcast_object({"a": 1}) == {"a": 1}
    assert comm.all_gather_object(3) == [3] and comm.gather_object(3) == [3]


# ---------------------------------------------------------------- two ranks (run by the process-group test below)


def _collectives(rank: int, expected_backend: str) -> None:
    assert comm.active() and comm.world_size() == 2 and comm.rank() == rank
    assert comm.backend() == expected_backend and comm.device_backend("cpu") == "gloo"

    seconds: list = []  # the timed regions of finished work the calls hand over
    total = comm.all_reduce(torch.tensor([rank + 1.0, 10.0]), into=seconds.append)
    assert total.tolist() == [3.0, 20.0] and len(seconds) == 1 and seconds[0].seconds >= 0
    largest = comm.all_reduce(torch.tensor([float(rank)]), op=comm.MAX)
    assert largest.tolist() == [1.0]
    pending = comm.all_reduce_async(torch.full((3,), float(rank)))
    assert pending.wait(into=seconds.append).tolist() == [1.0, 1.0, 1.0] and len(seconds) == 2
    assert pending.wait().tolist() == [1.0, 1.0, 1.0]  # a second wait gives the same result

    # uneven splits with zeros: rank 0 sends 2 rows to itself and none to rank 1; rank 1 sends 1 to rank 0 and 3 to itself
    send_counts = [[2, 0], [1, 3]][rank]
    rows = torch.arange(sum(send_counts) * 2, dtype=torch.float32).reshape(-1, 2) + 100 * rank
    recv_counts = comm.exchange_counts(send_counts, into=seconds.append)
    assert recv_counts == [[2, 1], [0, 3]][rank] and len(seconds) == 3
    received = comm.all_to_all(rows, send_counts, recv_counts, into=seconds.append)
    if rank == 0:  # its own 2 rows, then rank 1's first row
        assert received.tolist() == [[0.0, 1.0], [2.0, 3.0], [100.0, 101.0]]
    else:  # nothing from rank 0, then its own last 3 rows
        assert received.tolist() == [[102.0, 103.0], [104.0, 105.0], [106.0, 107.0]]
    assert len(seconds) == 4
    later = comm.all_to_all_async(rows, send_counts, recv_counts)
    assert later.wait().equal(received)
    # nothing at all to send: every split zero, a (0, 2) result
    nothing = comm.all_to_all(torch.empty((0, 2)), [0, 0], [0, 0])
    assert nothing.shape == (0, 2)
    with pytest.raises(ValueError, match="one count per rank"):
        comm.all_to_all(rows, [len(rows)], [len(rows)])
    # integer rows (node ids, as the node-memory strategies request them)
    ids = torch.tensor([rank * 10 + 1, rank * 10 + 2], dtype=torch.int64)
    assert comm.all_to_all(ids, [1, 1], [1, 1]).tolist() == [[1, 11], [2, 12]][rank]

    # point to point, both directions
    if rank == 0:
        comm.send(torch.tensor([7.0, 8.0]), 1, into=seconds.append)
        assert comm.recv(torch.empty(1, dtype=torch.int64), 1).tolist() == [9]
    else:
        assert comm.recv(torch.empty(2), 0, into=seconds.append).tolist() == [7.0, 8.0]
        comm.send(torch.tensor([9]), 0)
    assert len(seconds) == 5

    # Python objects
    assert comm.broadcast_object({"plan": [1, 2]} if rank == 0 else None) == {"plan": [1, 2]}
    assert comm.broadcast_object("from one" if rank == 1 else None, src=1) == "from one"
    assert comm.all_gather_object(("rank", rank)) == [("rank", 0), ("rank", 1)]
    gathered = comm.gather_object({"r": rank})
    assert gathered == ([{"r": 0}, {"r": 1}] if rank == 0 else None)
    assert all(region.seconds >= 0 for region in seconds)
    comm.barrier()


# ---------------------------------------------------------------- the process group's backend


def test_auto_on_cpu_is_gloo_and_on_gpus_of_their_own_the_device_keyed_backend():
    assert choose_backend("cpu", "auto").backend == "gloo"
    choice = choose_backend("cuda", "auto", ["GPU-a", "GPU-b", "GPU-c", "GPU-d"])
    assert choice.backend == "cpu:gloo,cuda:nccl" and not choice.shared_gpu
    assert choose_backend("cuda", "auto", ["GPU-a"]).backend == "cpu:gloo,cuda:nccl"  # one rank


def test_ranks_that_share_a_physical_gpu_keep_gloo_and_say_why():
    choice = choose_backend("cuda", "auto", ["GPU-a", "GPU-b", "GPU-a"])
    assert choice.backend == "gloo" and choice.shared_gpu
    assert "ranks 0 and 2 share the GPU GPU-a" in choice.reason and "\n" not in choice.reason
    assert choose_backend("cuda", "auto", ["GPU-a", "GPU-b"], nccl_available=False).backend == "gloo"


@pytest.mark.parametrize("requested", ["gloo", "cpu:gloo", "cpu:gloo,cuda:nccl", "nccl"])
def test_a_set_backend_is_taken_as_it_is(requested):
    assert choose_backend("cuda", requested, ["GPU-a", "GPU-b"]).backend == requested
    if "nccl" not in requested:  # gloo stages CUDA tensors through the host: ranks may share a GPU
        assert choose_backend("cuda", requested, ["GPU-a", "GPU-a"]).backend == requested


@pytest.mark.parametrize("requested", ["cpu:gloo,cuda:nccl", "nccl"])
def test_a_set_backend_with_nccl_refuses_ranks_that_share_a_gpu_in_one_line(requested):
    # NCCL would die at its first collective with "Duplicate GPU detected"
    with pytest.raises(ConfigError, match=re.escape("ranks 0 and 2 share the GPU GPU-a")) as refused:
        choose_backend("cuda", requested, ["GPU-a", "GPU-b", "GPU-a"])
    assert "\n" not in str(refused.value) and "dist_backend=auto" in str(refused.value)


def test_mig_slices_of_one_gpu_share_its_pci_address():
    # each MIG slice has a UUID of its own, but one PCI bus id: NCCL sees one GPU twice
    slices = [["uuid MIG-1", "pci 0000:3b:00 on node1"], ["uuid MIG-2", "pci 0000:3b:00 on node1"]]
    choice = choose_backend("cuda", "auto", slices)
    assert choice.backend == "gloo" and choice.shared_gpu and "pci 0000:3b:00 on node1" in choice.reason
    with pytest.raises(ConfigError, match="share the GPU pci 0000:3b:00"):
        choose_backend("cuda", "nccl", slices)
    # the same PCI address on two hosts is two GPUs
    apart = [["uuid GPU-1", "pci 0000:3b:00 on node1"], ["uuid GPU-2", "pci 0000:3b:00 on node2"]]
    assert choose_backend("cuda", "nccl", apart).backend == "nccl"


@pytest.mark.parametrize(
    ("device", "requested", "message"),
    [
        ("cpu", "nccl", "has no backend for CPU tensors, and the run's device is cpu"),
        ("cpu", "cuda:nccl", "has no backend for CPU tensors"),
        ("cpu", "cpu:gloo,cuda", "is not a backend string torch accepts"),
        ("cuda", "mpi", "names mpi, which this PyTorch build does not have"),
    ],
)
def test_a_set_backend_that_cannot_serve_the_run_is_one_line(device, requested, message):
    if requested == "mpi" and torch.distributed.is_mpi_available():
        pytest.skip("this PyTorch build has MPI")
    with pytest.raises(ConfigError, match=re.escape(message)):
        choose_backend(device, requested)


class FakeGPUs:
    """``torch.cuda.get_device_properties`` of a node whose device ``i`` is the physical GPU ``uuids[rank]``
    (a UUID, or a UUID and a PCI bus number): under SLURM every rank sees one device, index 0,
    whatever GPU it is."""

    def __init__(self, uuids: list[str | tuple[str, int] | None]) -> None:
        self.uuids = uuids
        self.rank_of_thread: dict[int, int] = {}

    def __call__(self, device: torch.device) -> SimpleNamespace:
        gpu = self.uuids[self.rank_of_thread[threading.get_ident()]]
        if isinstance(gpu, tuple):
            return SimpleNamespace(uuid=gpu[0], pci_bus_id=gpu[1], pci_device_id=0, pci_domain_id=0)
        return SimpleNamespace(uuid=gpu)


def agree(monkeypatch, uuids: list[str | tuple[str, int] | None], requested: str = "auto") -> list[BackendChoice | str]:
    """Every rank's choice (or the one line that refused the run), each rank a thread sharing one
    in-memory store, each on its "cuda:0" (``None``: a rank that found no GPU, on CPU)."""
    gpus = FakeGPUs(uuids)
    monkeypatch.setattr(torch.cuda, "get_device_properties", gpus)
    monkeypatch.setattr(torch.distributed, "is_nccl_available", lambda: True)
    store = torch.distributed.HashStore()
    choices: list[BackendChoice | str | None] = [None] * len(uuids)

    def rank(r: int) -> None:
        gpus.rank_of_thread[threading.get_ident()] = r
        device = torch.device("cuda", 0) if uuids[r] is not None else torch.device("cpu")
        try:
            choices[r] = agree_on_backend(store, r, len(uuids), device, requested)
        except ConfigError as exc:
            choices[r] = str(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in reversed(range(len(uuids)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(choice is not None for choice in choices)
    return choices  # type: ignore[return-value]


def test_every_rank_agrees_on_nccl_when_each_has_its_own_gpu_even_as_device_zero(monkeypatch):
    choices = agree(monkeypatch, ["GPU-1", "GPU-2", "GPU-3", "GPU-4"])  # one GPU visible per task: no count says so
    assert {c.backend for c in choices} == {"cpu:gloo,cuda:nccl"}


def test_every_rank_keeps_gloo_when_two_share_a_gpu(monkeypatch):
    choices = agree(monkeypatch, ["GPU-1", "GPU-1", "GPU-2", "GPU-2"])
    assert {c.backend for c in choices} == {"gloo"} and all("ranks 0 and 1 share the GPU GPU-1" in c.reason for c in choices)


def test_one_rank_asks_no_store():
    class NoStore:
        def set(self, *args):
            raise AssertionError("the store was used")

        get = set

    assert agree_on_backend(NoStore(), 0, 1, torch.device("cpu")).backend == "gloo"
    assert agree_on_backend(NoStore(), 0, 1, torch.device("cpu"), "cpu:gloo").backend == "cpu:gloo"


def test_a_node_without_a_gpu_among_gpu_nodes_is_refused_on_every_rank_in_one_line(monkeypatch):
    # device=auto: ranks 2 and 3 found no GPU; rank 0 used to wait for their GPUs until the timeout
    choices = agree(monkeypatch, ["GPU-1", "GPU-2", None, None])
    assert len(set(choices)) == 1 and isinstance(choices[0], str), choices
    assert "found a GPU on 2 rank(s) but none on rank(s) 2-3" in choices[0] and "device=cpu" in choices[0]
    # rank 0 itself without one
    assert all(isinstance(c, str) and "none on rank(s) 0" in c for c in agree(monkeypatch, [None, "GPU-1"]))


@pytest.mark.parametrize("requested", ["nccl", "cpu:gloo,cuda:nccl"])
def test_a_set_nccl_backend_checks_the_gpus_too_by_their_pci_address(monkeypatch, requested):
    choices = agree(monkeypatch, [("MIG-a", 0x3B), ("MIG-b", 0x3B)], requested)  # two MIG slices of one GPU
    assert all(isinstance(c, str) and "ranks 0 and 1 share the GPU pci 0000:3b:00" in c for c in choices), choices
    own = agree(monkeypatch, [("GPU-a", 0x3B), ("GPU-b", 0x5E)], requested)
    assert {c.backend for c in own if isinstance(c, BackendChoice)} == {requested} and len(own) == 2


@pytest.mark.parametrize(("cores", "local_ranks", "threads"), [(16, 8, 2), (16, 1, 16), (4, 8, 1), (7, 2, 3), (1, 1, 1)])
def test_a_node_s_cores_are_shared_among_its_ranks(cores, local_ranks, threads):
    assert threads_per_rank(cores, local_ranks) == threads


@pytest.mark.parametrize(
    ("local_ranks", "affinity", "node_cores", "requested", "threads"),
    [
        (8, 64, 64, None, 8),  # nobody narrowed the ranks: they share the node
        (8, 8, 64, None, 8),  # SLURM's cgroup or torchrun's binding gave each its 8 cores: all of them
        (2, 6, 16, None, 6),  # a container of 6 cores for this rank
        (8, 64, 64, "3", 3),  # OMP_NUM_THREADS, set by the launcher or the user, wins
        (8, 64, 64, "many", 8),  # one torch would refuse too: the cores decide
        (4, 2, 2, None, 1),  # never none
    ],
)
def test_a_rank_s_threads_follow_the_cores_its_launcher_gives_it(local_ranks, affinity, node_cores, requested, threads):
    assert rank_threads(local_ranks, affinity, node_cores, requested) == threads


def _join(rank: int, world_size: int, port: int, requested: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LOCAL_WORLD_SIZE=str(world_size))
    backend = init_process_group(DistEnv(rank, world_size, rank), torch.device("cpu"), 60.0, requested)
    try:
        total = comm.all_reduce(torch.tensor([1.0]))
        record = {"backend": backend, "comm": comm.backend(), "sum": total.item(), "threads": torch.get_num_threads()}
        gathered = comm.gather_object(record)
        if rank == 0:
            Path(out).write_text(json.dumps(gathered))
        _collectives(rank, backend)
    finally:
        close_process_group()


@pytest.mark.parametrize(
    ("requested", "backend"), [pytest.param("auto", "gloo", marks=pytest.mark.slow), ("cpu:gloo", "cpu:gloo")]
)
def test_two_ranks_start_with_the_chosen_backend_share_the_cores_and_run_every_collective(tmp_path, requested, backend):
    """``init_process_group`` as a run calls it (``dist_backend`` auto, or a device-keyed string), then
    every helper of ``comm`` on the group it made."""
    out = tmp_path / "ranks.json"
    context = mp.start_processes(_join, args=(2, free_port(), requested, str(out)), nprocs=2, start_method="spawn", join=False)
    deadline = time.monotonic() + 120
    while not context.join(timeout=1.0):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("the ranks did not join within 120 s")
    ranks = json.loads(out.read_text())
    expected_threads = rank_threads(2, len(os.sched_getaffinity(0)), os.cpu_count() or 1, os.environ.get("OMP_NUM_THREADS"))
    assert ranks == [{"backend": backend, "comm": backend, "sum": 2.0, "threads": expected_threads}] * 2


# ---------------------------------------------------------------- the rule

COLLECTIVES = re.compile(
    r"(all_reduce|all_reduce_coalesced|all_to_all|all_to_all_single|all_gather|all_gather_into_tensor|all_gather_object|"
    r"all_gather_coalesced|broadcast|broadcast_object_list|send|recv|isend|irecv|send_object_list|recv_object_list|"
    r"reduce|reduce_scatter|reduce_scatter_tensor|gather|gather_object|scatter|scatter_object_list|barrier|monitored_barrier|"
    r"batch_isend_irecv|_all_gather_base|_reduce_scatter_base)"
)
DISTRIBUTED_MODULES = {"torch.distributed", "torch.distributed.distributed_c10d"}


def collective_calls(source: str) -> list[str]:
    """The ``torch.distributed`` collectives ``source`` calls or imports by name, with their lines."""
    tree = ast.parse(source)
    aliases: set[str] = set()  # names bound to torch.distributed (or its c10d module)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in DISTRIBUTED_MODULES and alias.asname:
                    aliases.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in DISTRIBUTED_MODULES:
                    aliases.add(alias.asname or alias.name)
                elif node.module in DISTRIBUTED_MODULES and COLLECTIVES.fullmatch(alias.name):
                    found.append(f"line {node.lineno}: imports {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and COLLECTIVES.fullmatch(node.attr):
            owner = ast.unparse(node.value)
            if owner in aliases or owner in DISTRIBUTED_MODULES:
                found.append(f"line {node.lineno}: {owner}.{node.attr}")
    return found


def test_the_rule_finds_a_collective_however_it_is_spelled():
    assert collective_calls("import torch.distributed as dist\ndist.all_reduce(x)\n") == ["line 2: dist.all_reduce"]
    assert collective_calls("import torch\ntorch.distributed.all_to_all_single(a, b)\n")
    assert collective_calls("from torch import distributed as d\nwork = d.isend(t, 1)\n")
    assert collective_calls("from torch.distributed import barrier\n")
    assert collective_calls("import torch.distributed as dist\nf = dist.batch_isend_irecv\n")
    assert not collective_calls("import torch.distributed as dist\ndist.init_process_group('gloo')\ndist.get_rank()\n")
    assert not collective_calls("from dygsched.engine import comm\ncomm.all_reduce(x)\n")


def test_no_module_but_comm_calls_a_torch_distributed_collective():
    package = ROOT / "dygsched"
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in sorted(package.rglob("*.py"))
        if path != package / "engine" / "comm.py" and (found := collective_calls(path.read_text()))
    }
    assert not offenders, f"collectives outside dygsched/engine/comm.py: {offenders}"


def test_the_rule_covers_the_whole_package():
    assert len(list((ROOT / "dygsched").rglob("*.py"))) > 50 and Path(comm.__file__) == ROOT / "dygsched" / "engine" / "comm.py"
