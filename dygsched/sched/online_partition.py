"""DistDy's online graph partitioning (section 4) and the baselines it is compared with.

Snapshot ``tau`` arrives, is placed on ``K`` stores (one per rank), then the window
``[tau - w + 1, tau]`` trains. A node stays *additive* on the store that held it at ``tau - 1`` (its
changed segments and references, ``c_v`` bytes) or is stored *full* (``C`` bytes) wherever it goes.
Store ``k`` may hold at most ``D^k`` bytes of features over the window.

``OnlinePartitioner`` is Algorithms 1-3:

* Alg. 1, base partition: a node that was on ``k`` stays there, additive, while ``c_v`` fits in
  ``k``'s free space ``S^k``; every other node goes full to the store with the most free space (a
  max-heap). A store that cannot take ``C`` when it tops the heap is a ``CapacityError``.
* Alg. 2, refinement (at most ``budget`` passes, stopping after a pass without a move): each node
  moves to ``argmax_m U_m(v) + phi^{mv} - Lambda^m s^{mv}`` when that store can hold it, where
  ``U_m(v)`` is the weight of its edges to nodes on ``m``, ``s^{mv}`` its size there (``c_v`` if it was
  on ``m`` before, else ``C``), ``Lambda^m`` the sum of ``m``'s prices over the window's slots and
  ``phi^{mv} = gamma (U/K - Lambda^m a^m)/|V| - [v was on m] mu^{mv}``, ``gamma = ln(2 eta) - 1``.
* Alg. 3, the online loop: prices start at ``F`` (by default from snapshot 1's base partition,
  ``F = U_1 / (2 eta sum_k a_1^k)``), grow as ``lambda_t^k *= exp(ln(2 eta) a_tau^k / D^k)`` for the
  slots ``t`` the snapshot occupies, and the rewards become ``mu_{tau+1}^{kv} = gamma (U/K - Lambda^k
  a^k)/|V|`` on each node's store (``clip_rewards``: at least 0, as the theory wants).

Edge weights ``W_uv`` are the expected feature-fetch cost: ``C`` times the probability that a
training mini-batch samples the edge, propagated hop by hop (``edge_weights``). Baselines
(``BASELINES``): ``metis`` (the union of every snapshot, edges weighted by how many snapshots hold
them, partitioned once), ``hash`` (id modulo K), ``greedy`` (METIS on the first snapshot, then nodes
stay and a new node joins the store holding most of its neighbours) and ``metis_layer`` (METIS on
each snapshot, its labels matched to the previous snapshot's by the Hungarian method). None of them
respects ``D^k``; ``over_capacity`` reports where they would exceed it. Numpy only.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dygsched.errors import ScheduleError

BASELINES = ("metis", "hash", "greedy", "metis_layer")
PARTITIONERS = ("distdy", *BASELINES)


class CapacityError(ScheduleError):
    """The stores cannot hold a snapshot under their capacities."""


@dataclass(frozen=True)
class SnapshotGraph:
    """What a partitioner sees of snapshot ``tau``: its nodes, its undirected edges (each once, ``u < v``)
    with weights ``W_uv``, and each node's additive size (``additive_bytes[v]``, used when ``v`` stays)."""

    nodes: np.ndarray
    edges: np.ndarray  # [2, E], u < v
    weights: np.ndarray  # [E]
    additive_bytes: np.ndarray  # [num_nodes] (whole id space)
    full_bytes: int
    num_nodes: int


@dataclass(frozen=True)
class SnapshotPartition:
    """Where snapshot ``tau``'s nodes live: ``store[v]`` (-1 for a node absent from it), which are stored
    additively, the bytes each store takes for it (``a_tau^k``), its utility ``U`` (the weight of edges
    inside stores), cut edges, and the seconds the partitioner took."""

    store: np.ndarray
    additive: np.ndarray  # bool [num_nodes]
    stored_bytes: np.ndarray  # [K]
    utility: float
    cut_edges: int
    seconds: float


def edge_weights(
    num_nodes: int, edges: np.ndarray, training: np.ndarray, batch: int, fanouts: Sequence[int], full_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """The undirected edges of a snapshot (``u < v``, each once) and their weights ``W_uv``.

    ``p_0`` is ``batch / |training|`` on training nodes; hop ``l`` samples ``min(1, f_l / d_v)`` of node
    ``v``'s neighbours, so ``p_{l+1}(u) = min(1, sum_v p_l(v) min(1, f_l/d_v))``; an edge's weight is
    ``C`` times the probability, summed over hops, that either end samples the other.
    """
    src, dst = edges
    keep = src != dst
    a, b = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    keys = np.unique(a * num_nodes + b)
    u, v = keys // num_nodes, keys % num_nodes
    degree = np.bincount(np.concatenate([u, v]), minlength=num_nodes).astype(float)
    p = np.zeros(num_nodes)
    p[training] = min(1.0, batch / max(len(training), 1))
    weight = np.zeros(keys.size)
    for fanout in fanouts:
        share = np.minimum(1.0, fanout / np.maximum(degree, 1.0))
        from_v, from_u = p[v] * share[v], p[u] * share[u]  # v samples u, u samples v
        weight += from_v + from_u
        nxt = np.bincount(u, weights=from_v, minlength=num_nodes) + np.bincount(v, weights=from_u, minlength=num_nodes)
        p = np.minimum(1.0, nxt)
    return np.stack([u, v]), weight * full_bytes


def utility(store: np.ndarray, graph: SnapshotGraph) -> float:
    u, v = graph.edges
    return float(graph.weights[store[u] == store[v]].sum()) if u.size else 0.0


def storage(store: np.ndarray, previous: np.ndarray | None, graph: SnapshotGraph, stores: int) -> tuple[np.ndarray, np.ndarray]:
    """(additive mask, bytes per store) of an assignment: a node on the store that held it before is additive."""
    additive = np.zeros(graph.num_nodes, dtype=bool)
    if previous is not None:
        additive = (store >= 0) & (store == previous)
    sizes = np.where(additive, graph.additive_bytes, graph.full_bytes)
    present = store >= 0
    return additive, np.bincount(store[present], weights=sizes[present], minlength=stores)


def _csr(graph: SnapshotGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    u, v = graph.edges
    rows, cols, w = np.concatenate([u, v]), np.concatenate([v, u]), np.concatenate([graph.weights, graph.weights])
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr), cols[order], w[order]


@dataclass
class OnlinePartitioner:
    """Algorithms 1-3 of DistDy (see the module docstring); ``partition`` is called once per snapshot, in order."""

    stores: int
    capacity: np.ndarray  # D^k, bytes
    window: int
    eta: float = 6.0
    budget: int = 300
    initial_price: float | None = None  # F; None: from snapshot 1's base partition
    clip_rewards: bool = False
    prices: dict[int, np.ndarray] = field(default_factory=dict)  # slot t -> lambda_t [K]
    rewards: np.ndarray | None = None  # mu for the next snapshot: [num_nodes] on each node's store (0 elsewhere)
    history: list[np.ndarray] = field(default_factory=list)  # a_t [K] of the last w - 1 snapshots
    previous: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.capacity = np.asarray(self.capacity, dtype=float)
        if self.capacity.shape != (self.stores,) or (self.capacity <= 0).any():
            raise ScheduleError(f"every one of the {self.stores} stores needs a positive capacity")
        if self.eta <= 0.5 or self.budget < 1:
            raise ScheduleError("eta must exceed 1/2 (ln(2 eta) > 0) and the budget must be at least 1 pass")

    @property
    def gamma(self) -> float:
        return math.log(2 * self.eta) - 1

    def _held_before(self) -> np.ndarray:
        """``[K]``: the bytes each store holds of the window's earlier snapshots (the last ``w - 1``)."""
        return sum(self.history[-(self.window - 1) :] if self.window > 1 else [], np.zeros(self.stores))

    def _price_sum(self, tau: int) -> np.ndarray:
        return sum(
            (self.prices.get(t, np.full(self.stores, self.initial_price or 0.0)) for t in range(tau, tau + self.window)),
            np.zeros(self.stores),
        )

    def partition(self, tau: int, graph: SnapshotGraph) -> SnapshotPartition:
        start = time.perf_counter()
        free = self.capacity - self._held_before()
        store = self._base(graph, free.copy())
        if self.initial_price is None:  # F from snapshot 1's base partition (causal)
            _, a = storage(store, self.previous, graph, self.stores)
            self.initial_price = utility(store, graph) / (2 * self.eta * max(float(a.sum()), 1e-12))
        store = self._refine(tau, graph, store, free)
        additive, a = storage(store, self.previous, graph, self.stores)
        window_bytes = a + self._held_before()
        assert (window_bytes <= self.capacity * (1 + 1e-12)).all(), "a store's capacity was exceeded"
        total = utility(store, graph)
        for t in range(tau, tau + self.window):  # the slots this snapshot occupies
            self.prices[t] = self.prices.get(t, np.full(self.stores, self.initial_price)) * np.exp(
                math.log(2 * self.eta) * a / self.capacity
            )
        per_store = self.gamma * (total / self.stores - self._price_sum(tau) * a) / max(graph.nodes.size, 1)
        rewards = np.zeros(graph.num_nodes)
        present = store >= 0
        rewards[present] = per_store[store[present]]
        self.rewards = np.maximum(rewards, 0.0) if self.clip_rewards else rewards
        self.history = [*self.history, a][-max(self.window - 1, 1) :] if self.window > 1 else []
        self.previous = store
        u, v = graph.edges
        return SnapshotPartition(store, additive, a, total, int((store[u] != store[v]).sum()), time.perf_counter() - start)

    def _base(self, graph: SnapshotGraph, free: np.ndarray) -> np.ndarray:
        """Algorithm 1."""
        store = np.full(graph.num_nodes, -1, dtype=np.int64)
        homeless = []
        for v in graph.nodes.tolist():
            k = int(self.previous[v]) if self.previous is not None else -1
            if k >= 0 and graph.additive_bytes[v] <= free[k]:
                store[v] = k
                free[k] -= graph.additive_bytes[v]
            else:
                homeless.append(v)
        heap = [(-free[k], k) for k in range(self.stores)]
        heapq.heapify(heap)
        for v in homeless:
            space, k = heapq.heappop(heap)
            if -space < graph.full_bytes:
                raise CapacityError(
                    f"no store can hold node {v} ({graph.full_bytes} bytes): the most free space is {-space:.0f} bytes; raise the capacity"
                )
            store[v] = k
            heapq.heappush(heap, (space + graph.full_bytes, k))
        return store

    def _refine(self, tau: int, graph: SnapshotGraph, store: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Algorithm 2: in node order, a node moves to the store of highest payoff (strictly higher than its
        own, so ties do not flap) when that store has room; passes repeat until one moves nothing, at most
        ``budget`` of them.

        Exactly that sequential loop, made fast by screening: a node's payoffs differ from one store to
        another by what it alone decides (its edges, its size, its reward) plus ``-gamma Lambda^m a^m /
        |V|``, which every move shifts by at most ``drift`` per store. One vectorised pass over all
        nodes finds those whose best other store is within a margin of their own; only they, and the
        later neighbours of a node that moves (their edges changed), are evaluated one by one. After
        ``MARGIN_MOVES`` moves the margin is spent and the rest of the pass is screened again."""
        payoff = _Payoff(self, tau, graph, store, free)
        nodes = graph.nodes
        position = np.full(graph.num_nodes, -1, dtype=np.int64)
        position[nodes] = np.arange(nodes.size)
        self.passes = 0
        for _ in range(self.budget):
            self.passes += 1
            moves, cursor = 0, 0
            while cursor < nodes.size:
                rest = nodes[cursor:]
                heap = (cursor + np.flatnonzero(payoff.may_move(rest))).tolist()  # positions, increasing: already a heap
                budget = MARGIN_MOVES
                while heap and budget:
                    at = heapq.heappop(heap)
                    while heap and heap[0] == at:  # a node marked twice
                        heapq.heappop(heap)
                    moved = payoff.visit(int(nodes[at]))
                    cursor = at + 1
                    if moved is not None:
                        moves += 1
                        budget -= 1
                        for u in moved[position[moved] > at].tolist():  # later neighbours: their edges changed
                            heapq.heappush(heap, int(position[u]))
                if not heap:
                    break  # (after MARGIN_MOVES moves the screening still holds: it covers that many)
            if moves == 0:
                break
        return payoff.store

    def payoffs(self, tau: int, graph: SnapshotGraph, store: np.ndarray) -> np.ndarray:
        """``[num_nodes, K]``: each node's payoff on each store given the others' places, up to a constant
        per node (``U/K``, the same on every store), with the prices and rewards in force for ``tau``:
        what Algorithm 2 maximises. Rows of absent nodes are meaningless."""
        free = self.capacity - self._held_before()
        return _Payoff(self, tau, graph, store.copy(), free).scores(graph.nodes)

    def room(self, tau: int, graph: SnapshotGraph, store: np.ndarray) -> np.ndarray:
        """``[num_nodes, K]``: whether store ``m`` has room for node ``v`` (its size there) as placed."""
        free = self.capacity - self._held_before()
        payoff = _Payoff(self, tau, graph, store.copy(), free)
        return payoff.room[None, :] >= payoff.sizes

    def state_dict(self) -> dict:
        return {
            "initial_price": self.initial_price, "prices": {t: p.tolist() for t, p in self.prices.items()},
            "rewards": None if self.rewards is None else self.rewards.tolist(), "history": [a.tolist() for a in self.history],
            "previous": None if self.previous is None else self.previous.tolist(),
        }  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        self.initial_price = state["initial_price"]
        self.prices = {int(t): np.asarray(p) for t, p in state["prices"].items()}
        self.rewards = None if state["rewards"] is None else np.asarray(state["rewards"])
        self.history = [np.asarray(a) for a in state["history"]]
        self.previous = None if state["previous"] is None else np.asarray(state["previous"], dtype=np.int64)


MARGIN_MOVES = 64  # moves a screening covers before the rest of the pass is screened again


class _Payoff:
    """The state of Algorithm 2 on one snapshot: where each node is, each store's bytes and free space,
    the weight of each node's edges to each store, and each node's payoff on each store."""

    def __init__(self, online: OnlinePartitioner, tau: int, graph: SnapshotGraph, store: np.ndarray, free: np.ndarray) -> None:
        K, n = online.stores, graph.num_nodes
        self.indptr, self.neighbours, self.weights = _csr(graph)
        previous = online.previous if online.previous is not None else np.full(n, -1)
        rewards = online.rewards if online.rewards is not None and online.rewards.size == n else np.zeros(n)
        _, self.a = storage(store, online.previous, graph, K)
        self.room = free - self.a
        self.store = store
        prices = online._price_sum(tau)
        # sizes[v, m]: C, or c_v on the store that held v before (there it also forgoes its reward)
        self.sizes = np.full((n, K), float(graph.full_bytes))
        was = np.flatnonzero(previous >= 0)
        self.sizes[was, previous[was]] = graph.additive_bytes[was]
        self.own = -prices[None, :] * self.sizes  # what v alone decides: its price on each store ...
        self.own[was, previous[was]] -= rewards[was]  # ... and the reward it gives up to stay
        self.links = np.zeros((n, K))  # links[v, m]: weight of v's edges to nodes on store m
        rows = np.repeat(np.arange(n), np.diff(self.indptr))
        placed = store[self.neighbours] >= 0
        np.add.at(self.links, (rows[placed], store[self.neighbours[placed]]), self.weights[placed])
        self.load = -online.gamma * prices / max(graph.nodes.size, 1)  # times a^m: the shared term
        # a move shifts a^m by at most C on two stores: the shared term of any pair by at most this
        self.drift = 2 * abs(online.gamma) * float(prices.max()) * graph.full_bytes / max(graph.nodes.size, 1)
        self.ties = 1e-9 * (np.abs(self.own).max() + np.abs(self.links).max() + 1.0)

    def scores(self, nodes: np.ndarray) -> np.ndarray:
        return self.links[nodes] + self.own[nodes] + self.load * self.a

    def may_move(self, nodes: np.ndarray) -> np.ndarray:
        """Whether each node could move within the next ``MARGIN_MOVES`` moves of anyone but its neighbours."""
        scores = self.scores(nodes)
        here = scores[np.arange(nodes.size), self.store[nodes]]
        scores[np.arange(nodes.size), self.store[nodes]] = -np.inf
        return scores.max(axis=1) > here - (MARGIN_MOVES * self.drift + self.ties)

    def visit(self, v: int) -> np.ndarray | None:
        """Algorithm 2's step for node ``v``: its neighbours when it moves, else None."""
        score = self.links[v] + self.own[v] + self.load * self.a
        k = int(self.store[v])
        best = int(np.argmax(score))  # the first store of highest payoff
        if best == k or not score[best] > score[k] or self.room[best] < self.sizes[v, best]:
            return None
        self.room[k] += self.sizes[v, k]
        self.a[k] -= self.sizes[v, k]
        self.room[best] -= self.sizes[v, best]
        self.a[best] += self.sizes[v, best]
        self.store[v] = best
        around = slice(self.indptr[v], self.indptr[v + 1])
        neighbours = self.neighbours[around]
        np.subtract.at(self.links[:, k], neighbours, self.weights[around])
        np.add.at(self.links[:, best], neighbours, self.weights[around])
        return neighbours


def _record(
    store: np.ndarray, previous: np.ndarray | None, graph: SnapshotGraph, stores: int, seconds: float
) -> SnapshotPartition:
    additive, a = storage(store, previous, graph, stores)
    u, v = graph.edges
    return SnapshotPartition(store, additive, a, utility(store, graph), int((store[u] != store[v]).sum()), seconds)


def _present(labels: np.ndarray, graph: SnapshotGraph) -> np.ndarray:
    store = np.full(graph.num_nodes, -1, dtype=np.int64)
    store[graph.nodes] = labels[graph.nodes]
    return store


def _aligned(labels: np.ndarray, previous: np.ndarray, stores: int) -> np.ndarray:
    """``labels`` renamed so that as many nodes as possible keep the store they had (Hungarian method)."""
    from scipy.optimize import linear_sum_assignment

    both = (labels >= 0) & (previous >= 0)
    overlap = np.zeros((stores, stores))
    np.add.at(overlap, (labels[both], previous[both]), 1)
    rows, cols = linear_sum_assignment(-overlap)
    rename = np.arange(stores)
    rename[rows] = cols
    return np.where(labels >= 0, rename[np.maximum(labels, 0)], -1)


def baseline_partitions(method: str, graphs: Sequence[SnapshotGraph], stores: int, seed: int = 0) -> list[SnapshotPartition]:
    """Every snapshot's partition by a baseline (``BASELINES``), in order, each with its storage and time."""
    from dygsched.data.partition import metis_parts

    if method not in BASELINES:
        raise ScheduleError(f"unknown partitioner '{method}' (choose from {', '.join(PARTITIONERS)})")
    out: list[SnapshotPartition] = []
    previous: np.ndarray | None = None
    fixed = None
    if method == "metis":  # the aggregate graph of every snapshot, once: its time is spread over the snapshots
        start = time.perf_counter()
        edges = np.concatenate([g.edges for g in graphs], axis=1)
        keys, counts = np.unique(edges[0] * graphs[0].num_nodes + edges[1], return_counts=True)
        union = np.stack([keys // graphs[0].num_nodes, keys % graphs[0].num_nodes])
        fixed = metis_parts(graphs[0].num_nodes, union, stores, seed, counts)
        spread = (time.perf_counter() - start) / len(graphs)
    for tau, graph in enumerate(graphs):
        start = time.perf_counter()
        if method == "hash":
            store = _present(np.arange(graph.num_nodes) % stores, graph)
        elif method == "metis":
            assert fixed is not None
            store = _present(fixed, graph)
        elif method == "metis_layer":
            labels = _present(metis_parts(graph.num_nodes, graph.edges, stores, seed + tau), graph)
            store = _aligned(labels, previous, stores) if previous is not None else labels
        else:  # greedy
            if previous is None:
                store = _present(metis_parts(graph.num_nodes, graph.edges, stores, seed), graph)
            else:
                store = np.full(graph.num_nodes, -1, dtype=np.int64)
                kept = graph.nodes[previous[graph.nodes] >= 0]
                store[kept] = previous[kept]
                indptr, neighbours, _ = _csr(graph)
                for v in graph.nodes[previous[graph.nodes] < 0].tolist():  # new nodes, in id order
                    around = store[neighbours[indptr[v] : indptr[v + 1]]]
                    around = around[around >= 0]
                    sizes = np.bincount(store[store >= 0], minlength=stores)
                    counts = np.bincount(around, minlength=stores) if around.size else np.zeros(stores)
                    store[v] = int(np.lexsort((sizes, -counts))[0])  # most neighbours, then the smallest store
        seconds = time.perf_counter() - start + (spread if method == "metis" else 0.0)
        out.append(_record(store, previous, graph, stores, seconds))
        previous = store
    return out


def over_capacity(partitions: Sequence[SnapshotPartition], capacity: np.ndarray, window: int) -> list[int]:
    """The snapshots at which some store would hold more than its capacity over the window."""
    late = []
    for tau in range(len(partitions)):
        held = sum(p.stored_bytes for p in partitions[max(0, tau - window + 1) : tau + 1])
        if (held > np.asarray(capacity) * (1 + 1e-12)).any():
            late.append(tau)
    return late


def store_capacity(graphs: Sequence[SnapshotGraph], window: int, stores: int, factor: float) -> np.ndarray:
    """``D^k``: the stores together hold ``factor`` windows of the largest snapshot stored whole, split evenly."""
    largest = max(g.nodes.size for g in graphs)
    return np.full(stores, factor * window * largest * graphs[0].full_bytes / stores)


def partition_stream(
    method: str,
    graphs: Sequence[SnapshotGraph],
    stores: int,
    capacity: np.ndarray,
    window: int,
    eta: float = 6.0,
    budget: int = 300,
    clip_rewards: bool = False,
    seed: int = 0,
) -> list[SnapshotPartition]:
    """Every snapshot's placement by ``method`` (``PARTITIONERS``), in arrival order."""
    if method == "distdy":
        online = OnlinePartitioner(stores, capacity, window, eta, budget, clip_rewards=clip_rewards)
        return [online.partition(tau, graph) for tau, graph in enumerate(graphs)]
    return baseline_partitions(method, graphs, stores, seed)
