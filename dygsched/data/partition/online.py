"""DistDy's online graph partitioning (section 4): its Algorithms 1-3.

Snapshot ``tau`` arrives, is placed on ``K`` stores (one per rank), then the window
``[tau - w + 1, tau]`` trains. A node stays *additive* on the store that held it at ``tau - 1`` (its
changed segments and references, ``c_v`` bytes) or is stored *full* (``C`` bytes) wherever it goes.
Store ``k`` may hold at most ``D^k`` bytes of features over the window.

``OnlinePartitioner`` is Algorithms 1-3:

* Alg. 1, base partition: a node that was on ``k`` stays there, additive, while ``c_v`` fits in
  ``k``'s free space ``S^k``; every other node goes full to the store with the most free space (the
  paper's max-heap). A store that cannot take ``C`` when it is the roomiest is a ``CapacityError``.
* Alg. 2, refinement (at most ``budget`` passes, stopping after a pass without a move): node ``v``
  on ``k`` moves to ``k' = argmax_m U_m(v) + phi^{mv} - Lambda^m a^m`` when ``k' != k`` and ``k'`` has
  room for it, where ``U_m(v)`` is the weight of its edges to nodes on ``m``, ``Lambda^m`` the sum of
  ``m``'s prices over the window's slots, ``a^m`` the bytes store ``m`` holds of snapshot ``tau`` (the
  store's load, Table 1's ``a_tau^k``: the term that prices out a store already holding much of the
  snapshot, the algorithm's balance mechanism) and ``phi^{mv} = gamma (U/K - Lambda^m a^m)/|V| -
  [v was on m] mu^{mv}``, ``gamma = ln(2 eta) - 1``. Every candidate is scored as if ``v`` were on it:
  ``a^m + s^{mv}`` for another store (``s^{mv}``: ``c_v`` if ``v`` was on ``m`` before, else ``C``),
  ``a^k`` for its own, so a score compares the partitions a move would make and nodes do not
  bounce between stores. The loop is sequential, as the paper writes it (each move changes the
  next node's payoff), and compiled (``dygsched.jit``).
* Alg. 3, the online loop: prices start at ``F`` (by default from snapshot 1's base partition,
  ``F = U_1 / (2 eta sum_k a_1^k)``), grow as ``lambda_t^k *= exp(ln(2 eta) a_tau^k / D^k)`` for the
  slots ``t`` the snapshot occupies, and the rewards become ``mu_{tau+1}^{kv} = gamma (U/K - Lambda^k
  a^k)/|V|`` on each node's store (``clip_rewards``: at least 0, as the theory wants).

``message_weight`` and ``fetch_weight`` (0, the paper's algorithm, by default) are extensions of
ours: the load the balance term prices becomes the snapshot's bytes plus, per node, its expected
sampled messages as a training target (``messages``: a rank's encoder work) and its strength, the
weight ``sum_u W_uv`` of its edges (how much the others read it: a store's served fetch traffic),
each scaled so that weight 1 gives it as much weight as the bytes. Bytes balance the stores'
memory; these balance what a rank computes and serves. Capacity is still bytes.

What a partitioner reads and gives (``SnapshotGraph``, its edge weights ``W_uv``,
``SnapshotPartition``) is ``snapshot_graph.py``; the baselines (``metis``, ``hash``, ``greedy``,
``metis_layer``) are ``online_baselines.py``. None of them respects ``D^k``; ``over_capacity``
reports where they would exceed it (out of memory, as the paper's Table 3 reports Greedy on
Ex500K). ``D^k`` is given in bytes or as a factor of the balanced window storage
(``store_capacity``); ``smallest_feasible_factor`` finds the least factor at which Algorithm 1 can
place every snapshot. ``partition_stream`` runs any ``online`` partitioner by name. Numpy (and
numba) only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dygsched.data.partition import partitioner
from dygsched.data.partition.snapshot_graph import SnapshotGraph, SnapshotPartition, adjacency, storage, utility
from dygsched.errors import ScheduleError
from dygsched.jit import compiled


class CapacityError(ScheduleError):
    """The stores cannot hold a snapshot under their capacities."""


# ---- the sequential loops of Algorithms 1 and 2 (compiled; see dygsched.jit) --------------------------
@compiled
def _base_partition(
    nodes: np.ndarray, previous: np.ndarray, additive: np.ndarray, full: float, free: np.ndarray, store: np.ndarray
) -> int:
    """Algorithm 1 into ``store`` (and ``free``): nodes that fit stay, additive, on their previous store;
    the others, in order, go whole to the store with the most free space (the first on ties, as the
    heap's ``(-space, k)`` order). Returns -1, or the first node no store could take."""
    homeless = np.empty(nodes.size, np.int64)
    count = 0
    for i in range(nodes.size):
        v = nodes[i]
        k = previous[v]
        if k >= 0 and additive[v] <= free[k]:
            store[v] = k
            free[k] -= additive[v]
        else:
            homeless[count] = v
            count += 1
    for i in range(count):
        v = homeless[i]
        k = 0
        for m in range(1, free.size):
            if free[m] > free[k]:
                k = m
        if free[k] < full:
            return v
        store[v] = k
        free[k] -= full
    return -1


@compiled
def _refine_passes(
    nodes: np.ndarray,
    indptr: np.ndarray,
    neighbours: np.ndarray,
    weights: np.ndarray,
    store: np.ndarray,
    previous: np.ndarray,
    additive: np.ndarray,
    full: float,
    work: np.ndarray,
    reward: np.ndarray,
    price: np.ndarray,
    room: np.ndarray,
    load: np.ndarray,
    links: np.ndarray,
    moves: np.ndarray,
    budget: int,
    ties: float,
) -> int:
    """Algorithm 2's passes, in place: ``store``, ``room`` (free bytes per store), ``load`` (what the
    balance term prices, per store), ``links[v, m]`` (weight of ``v``'s edges to store ``m``) and
    ``moves`` (per node). Node ``v`` on ``k`` scores store ``m`` as ``links[v, m] - price[m] (load[m] +
    [m != k] (s^{mv} + work[v])) - [m was v's store] reward[v]`` and moves to the first best store when
    it beats staying by more than ``ties`` and has room. Returns the passes made."""
    stores = room.size
    passes = 0
    for _ in range(budget):
        passes += 1
        moved = 0
        for i in range(nodes.size):
            v = nodes[i]
            k = store[v]
            before = previous[v]
            best = -1
            best_score = -np.inf
            here = 0.0
            for m in range(stores):
                size = additive[v] if m == before else full
                extra = 0.0 if m == k else size + work[v]
                score = links[v, m] - price[m] * (load[m] + extra)
                if m == before:
                    score -= reward[v]
                if m == k:
                    here = score
                if score > best_score:
                    best_score = score
                    best = m
            if best == k or best_score <= here + ties:
                continue
            size_there = additive[v] if best == before else full
            if room[best] < size_there:
                continue
            size_here = additive[v] if k == before else full
            room[k] += size_here
            room[best] -= size_there
            load[k] -= size_here + work[v]
            load[best] += size_there + work[v]
            store[v] = best
            for j in range(indptr[v], indptr[v + 1]):
                u = neighbours[j]
                links[u, k] -= weights[j]
                links[u, best] += weights[j]
            moves[v] += 1
            moved += 1
        if moved == 0:
            break
    return passes


@dataclass(frozen=True)
class _Terms:
    """What Algorithm 2 scores a partition of one snapshot with: per store the price on its load
    (``Lambda^m (1 + gamma/|V|)``: line 6's last term and ``phi``'s share of it), its load (the bytes
    it holds of the snapshot, plus the extensions' weights) and its free bytes; per node the reward
    it gives up by staying additive, its balance weight beyond bytes (the extensions) and its store
    before (-1: absent)."""

    price: np.ndarray  # [K]
    load: np.ndarray  # [K]
    room: np.ndarray  # [K]
    reward: np.ndarray  # [n]
    work: np.ndarray  # [n]
    previous: np.ndarray  # [n]


def _links(graph: SnapshotGraph, store: np.ndarray, stores: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The CSR of ``graph`` and ``links[v, m]``: the weight of ``v``'s edges to nodes on store ``m``."""
    indptr, neighbours, weights = adjacency(graph)
    links = np.zeros((graph.num_nodes, stores))
    rows = np.repeat(np.arange(graph.num_nodes), np.diff(indptr))
    placed = store[neighbours] >= 0
    np.add.at(links, (rows[placed], store[neighbours[placed]]), weights[placed])
    return indptr, neighbours, weights, links


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
    message_weight: float = 0.0  # the balance extensions (0: the paper's algorithm)
    fetch_weight: float = 0.0
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
        if self.message_weight < 0 or self.fetch_weight < 0:
            raise ScheduleError("message_weight and fetch_weight must be 0 or more")

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
        store = self._base(graph, self.capacity - self._held_before())
        if self.initial_price is None:  # F from snapshot 1's base partition (causal)
            _, a = storage(store, self.previous, graph, self.stores)
            self.initial_price = utility(store, graph) / (2 * self.eta * max(float(a.sum()), 1e-12))
        store, passes, moves = self._refine(tau, graph, store)
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
        cut = int((store[u] != store[v]).sum())
        return SnapshotPartition(store, additive, a, total, cut, time.perf_counter() - start, passes, int(moves.max(initial=0)))

    def _base(self, graph: SnapshotGraph, free: np.ndarray) -> np.ndarray:
        """Algorithm 1."""
        store = np.full(graph.num_nodes, -1, dtype=np.int64)
        previous = self.previous if self.previous is not None else np.full(graph.num_nodes, -1, dtype=np.int64)
        failed = _base_partition(
            graph.nodes.astype(np.int64),
            previous.astype(np.int64),
            graph.additive_bytes.astype(np.float64),
            float(graph.full_bytes),
            free,
            store,
        )
        if failed >= 0:
            raise CapacityError(
                f"no store can hold node {failed} ({graph.full_bytes} bytes): the most free space is {free.max():.0f} bytes; "
                "raise the capacity"
            )
        return store

    def _terms(self, tau: int, graph: SnapshotGraph, store: np.ndarray) -> _Terms:
        """Algorithm 2's terms for partition ``store`` of snapshot ``tau``, with the prices and rewards in force."""
        n = graph.num_nodes
        previous = self.previous if self.previous is not None else np.full(n, -1, dtype=np.int64)
        rewards = self.rewards if self.rewards is not None and self.rewards.size == n else np.zeros(n)
        price = self._price_sum(tau) * (1 + self.gamma / max(graph.nodes.size, 1))
        work = np.zeros(n)
        per_node = float(graph.additive_bytes[graph.nodes].mean()) if graph.nodes.size else 0.0
        extensions = [(self.message_weight, graph.messages)]
        if self.fetch_weight > 0:
            extensions.append((self.fetch_weight, np.bincount(graph.edges.ravel(), np.tile(graph.weights, 2), minlength=n)))
        for weight, per_vertex in extensions:
            if weight > 0 and per_vertex is not None and per_vertex[graph.nodes].max(initial=0) > 0:
                work = work + weight * per_node * per_vertex / per_vertex[graph.nodes].mean()  # weight 1: as much as bytes
        _, a = storage(store, self.previous, graph, self.stores)
        present = store >= 0
        load = a + np.bincount(store[present], weights=work[present], minlength=self.stores)
        room = self.capacity - self._held_before() - a
        return _Terms(price, load, room, rewards, work, previous.astype(np.int64))

    def _refine(
        self, tau: int, graph: SnapshotGraph, store: np.ndarray, loop: Callable[..., int] = _refine_passes
    ) -> tuple[np.ndarray, int, np.ndarray]:
        """Algorithm 2 (``loop``: ``_refine_passes``, or its plain Python in the tests) on the base partition:
        the refined partition, the passes it made and how often each node moved."""
        terms = self._terms(tau, graph, store)
        indptr, neighbours, weights, links = _links(graph, store, self.stores)
        moves = np.zeros(graph.num_nodes, dtype=np.int64)
        ties = 1e-9 * (np.abs(links).max(initial=0.0) + float((terms.price * terms.load).max()) + 1.0)
        passes = loop(
            graph.nodes.astype(np.int64),
            indptr,
            neighbours,
            weights,
            store,
            terms.previous,
            graph.additive_bytes.astype(np.float64),
            float(graph.full_bytes),
            terms.work,
            terms.reward,
            terms.price,
            terms.room.copy(),
            terms.load.copy(),
            links,
            moves,
            self.budget,
            ties,
        )
        return store, int(passes), moves

    def payoffs(self, tau: int, graph: SnapshotGraph, store: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For a partition ``store`` of snapshot ``tau``, with the prices and rewards in force for ``tau``
        (call before ``partition(tau, ...)``): ``[num_nodes, K]`` each node's score on each store as
        Algorithm 2 scores it (as if the node were there), and whether each store has room for it."""
        terms = self._terms(tau, graph, store)
        *_, links = _links(graph, store, self.stores)
        n = graph.num_nodes
        sizes = np.full((n, self.stores), float(graph.full_bytes))
        was = np.flatnonzero(terms.previous >= 0)
        sizes[was, terms.previous[was]] = graph.additive_bytes[was]
        own = np.zeros((n, self.stores), dtype=bool)
        present = np.flatnonzero(store >= 0)
        own[present, store[present]] = True
        extra = np.where(own, 0.0, sizes + terms.work[:, None])
        scores = links - terms.price[None, :] * (terms.load[None, :] + extra)
        scores[was, terms.previous[was]] -= terms.reward[was]
        room = terms.room[None, :] >= np.where(own, 0.0, sizes)
        return scores, room

    def state_dict(self) -> dict[str, Any]:
        return {
            "initial_price": self.initial_price,
            "prices": {t: p.tolist() for t, p in self.prices.items()},
            "rewards": None if self.rewards is None else self.rewards.tolist(),
            "history": [a.tolist() for a in self.history],
            "previous": None if self.previous is None else self.previous.tolist(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.initial_price = state["initial_price"]
        self.prices = {int(t): np.asarray(p) for t, p in state["prices"].items()}
        self.rewards = None if state["rewards"] is None else np.asarray(state["rewards"])
        self.history = [np.asarray(a) for a in state["history"]]
        self.previous = None if state["previous"] is None else np.asarray(state["previous"], dtype=np.int64)


def over_capacity(partitions: Sequence[SnapshotPartition], capacity: np.ndarray, window: int) -> list[int]:
    """The snapshots at which some store would hold more than its capacity over the window."""
    late = []
    for tau in range(len(partitions)):
        held = sum(p.stored_bytes for p in partitions[max(0, tau - window + 1) : tau + 1])
        if (held > np.asarray(capacity) * (1 + 1e-12)).any():
            late.append(tau)
    return late


def window_bytes_if_every_node_stays(graphs: Sequence[SnapshotGraph], window: int) -> np.ndarray:
    """``[T]``: the bytes all stores together hold over the window ending at each snapshot when every
    node stays on its store (additive where it was present before, whole where it is new): the least
    any placement can store."""
    per_snapshot, previous = [], None
    for graph in graphs:
        sizes = np.full(graph.nodes.size, float(graph.full_bytes))
        if previous is not None:
            stayed = previous[graph.nodes]
            sizes[stayed] = graph.additive_bytes[graph.nodes[stayed]]
        per_snapshot.append(sizes.sum())
        previous = np.zeros(graph.num_nodes, dtype=bool)
        previous[graph.nodes] = True
    totals = np.cumsum([0.0, *per_snapshot])
    ends = np.arange(1, len(graphs) + 1)
    return totals[ends] - totals[np.maximum(ends - window, 0)]


def store_capacity(
    graphs: Sequence[SnapshotGraph], window: int, stores: int, factor: float | None = None, bytes_per_store: float | None = None
) -> np.ndarray:
    """``D^k``, the same for every store: ``bytes_per_store``, or ``factor`` times the balanced window
    storage (the heaviest window's ``window_bytes_if_every_node_stays``, split evenly over the stores)."""
    if bytes_per_store is not None:
        return np.full(stores, float(bytes_per_store))
    if factor is None:
        raise ScheduleError("give the stores' capacity in bytes or as a factor of the balanced window storage")
    return np.full(stores, factor * float(window_bytes_if_every_node_stays(graphs, window).max()) / stores)


def partition_stream(
    method: str,
    graphs: Sequence[SnapshotGraph],
    stores: int,
    capacity: np.ndarray,
    window: int,
    seed: int = 0,
    **options: float,
) -> list[SnapshotPartition]:
    """Every snapshot's placement by ``method`` (an ``online`` partitioner of ``dygsched.data.partition``),
    in arrival order; ``options`` are ``OnlinePartitioner``'s (``eta``, ``budget``, ``clip_rewards``,
    ``message_weight``, ``fetch_weight``) for ``distdy`` (the baselines ignore them)."""
    return partitioner("online", method).load()(graphs, stores, capacity, window, seed, **options)


def distdy_partitions(
    graphs: Sequence[SnapshotGraph], stores: int, capacity: np.ndarray, window: int, seed: int = 0, **options: float
) -> list[SnapshotPartition]:
    """DistDy's Algorithms 1-3 (``OnlinePartitioner``, deterministic: ``seed`` is not used)."""
    online = OnlinePartitioner(stores, capacity, window, **options)  # type: ignore[arg-type]
    return [online.partition(tau, graph) for tau, graph in enumerate(graphs)]


def smallest_feasible_factor(graphs: Sequence[SnapshotGraph], window: int, stores: int, **options: float) -> float:
    """The least capacity factor (``store_capacity``) at which Algorithms 1-3 place every snapshot, to
    0.01 (found by bisection; at least 1, since no placement stores less than every node staying)."""

    def fits(factor: float) -> bool:
        try:
            partition_stream("distdy", graphs, stores, store_capacity(graphs, window, stores, factor), window, seed=0, **options)
        except CapacityError:
            return False
        return True

    low, high = 1.0, 1.0
    while not fits(high):
        low, high = high, high * 1.5
        if high > 1e6:
            raise CapacityError("no capacity lets Algorithm 1 place these snapshots")
    if high == 1.0:
        return 1.0
    while high - low > 0.005:
        middle = (low + high) / 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    rounded = math.ceil(high * 100) / 100
    return rounded if fits(rounded) else high
