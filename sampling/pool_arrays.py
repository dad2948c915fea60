"""The campaign's pool as numpy arrays: what `estimation` computes on.

Built from the database once per pool version (imports bump `Campaign.pool_version`) and
cached twice: in a `.npz` file under ``settings.VAR_DIR / "pool-arrays"`` (shared by the web
server and the worker) and in this process's memory. Layout (see `estimation.sampling.pool`):

- topics: the campaign's topics that have pool items, in qid order (``m`` of them);
- slots: each topic's pool items in docno order (``n`` = the largest pool of a topic);
  names, not database ids, fix the order, so a campaign's seeded draws replay on any database;
- rankings (S, m, D): slot per position of each pooled system (import order), trec_eval order
  (score descending, docno descending), D = max(pool depth, metric cutoff), -1 = empty;
- features (m, n, d): the label model's item features (`FEATURE_NAMES`).
"""

from __future__ import annotations

import io
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from estimation.sampling.pool import Pool
from labeling.models import Campaign, PoolItem, RankingEntry, System
from labeling.selectors import ranking_positions

EMPTY = -1
_KEY_SHIFT = np.int64(1) << np.int64(32)
_MEMORY: dict[tuple[int, str, int], PoolArrays] = {}
_MEMORY_LOCK = threading.Lock()
_BUILDING: dict[tuple[int, str, int], threading.Lock] = {}
"""A lock per version being built in this process (`pool_arrays_for`)."""
_MEMORY_LIMIT = 4


@dataclass(frozen=True, eq=False)
class PoolArrays:
    """A campaign's pool as arrays (module docstring), plus ids to map back to rows."""

    topic_ids: np.ndarray  # (m,) Topic.pk
    topic_qids: tuple[str, ...]
    item_ids: np.ndarray  # (m, n) PoolItem.pk, -1 on unused slots
    document_ids: np.ndarray  # (m, n) Document.pk, -1 on unused slots
    docnos: tuple[tuple[str, ...], ...]
    slot_used: np.ndarray  # (m, n) bool
    rankings: np.ndarray  # (S, m, D)
    scores: np.ndarray  # (S, m, n), nan where the system does not rank the slot
    lengths: np.ndarray  # (m, n), nan where unknown
    priors: np.ndarray | None  # (m, n, G) imported prior probabilities, nan rows where none
    system_ids: np.ndarray  # (S,)
    system_names: tuple[str, ...]
    keys: np.ndarray  # sorted topic_id << 32 | document_id of every used slot
    key_positions: np.ndarray  # flat index (t * n + slot) of each key
    # (m, n) PoolItem.drawable_after: only draws of a later order could pick the slot (0 on the
    # pool the first draw saw, and on unused slots)
    drawable_after: np.ndarray

    @property
    def n_topics(self) -> int:
        return int(self.slot_used.shape[0])

    @property
    def n_slots(self) -> int:
        return int(self.slot_used.shape[1])

    def locate(self, topic_ids: np.ndarray, document_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(topic index, slot) of each pair, -1 where the pair is not a pool item."""
        wanted = np.asarray(topic_ids, dtype=np.int64) * _KEY_SHIFT + np.asarray(document_ids, dtype=np.int64)
        if self.keys.size == 0 or self.n_slots == 0:
            missing = np.full(wanted.shape, -1, dtype=np.int64)
            return missing, missing.copy()
        where = np.clip(np.searchsorted(self.keys, wanted), 0, self.keys.size - 1)
        hit = self.keys[where] == wanted
        flat = self.key_positions[where]
        topic = np.where(hit, flat // self.n_slots, -1)
        slot = np.where(hit, flat % self.n_slots, -1)
        return topic.astype(np.int64), slot.astype(np.int64)


def pool_from_arrays(
    arrays: PoolArrays, theta: np.ndarray | None = None, item_cost: np.ndarray | None = None
) -> Pool:
    """The `estimation.sampling.pool.Pool` of these arrays, p(x) uniform over the topics.

    Without `theta` and `item_cost` the pool carries placeholders (grade 0 certain, zero costs):
    enough for what reads only the rankings and p(x), such as `system_weights`.
    """
    m, n = arrays.slot_used.shape
    if theta is None:
        theta = np.zeros((m, n, 2))
        theta[:, :, 0] = 1.0
    return Pool(
        theta=theta,
        slot_used=arrays.slot_used,
        rankings=arrays.rankings,
        item_cost=np.zeros((m, n)) if item_cost is None else item_cost,
        query_weight=np.ones(m),
        query_ids=arrays.topic_qids,
        system_names=arrays.system_names,
    )


def pool_depth_of(campaign: Campaign) -> int:
    """D: the pool depth, at least the metric's cutoff."""
    return max(campaign.effective_pool_depth, campaign.metric_cutoff)


def pooled_systems(campaign: Campaign) -> list[System]:
    """The systems whose rankings form the pool, in import order."""
    return list(System.objects.filter(campaign=campaign, evaluation_only=False).order_by("id"))


def _cache_key(campaign: Campaign) -> tuple[int, str, int]:
    return (campaign.pk, campaign.created_at.strftime("%Y%m%dT%H%M%S%f"), campaign.pool_version)


def _cache_path(key: tuple[int, str, int]) -> Path:
    return Path(settings.VAR_DIR) / "pool-arrays" / f"campaign-{key[0]}-{key[1]}-v{key[2]}.npz"


def pool_arrays_for(campaign: Campaign) -> PoolArrays:
    """The campaign's pool arrays: from memory, the file cache, or built from the database. One
    thread of a process builds a version while the others wait for it: after a big run is pooled
    the build takes seconds of CPU, and every request that needed it built its own copy."""
    key = _cache_key(campaign)
    with _MEMORY_LOCK:
        cached = _MEMORY.get(key)
        building = _BUILDING.setdefault(key, threading.Lock()) if cached is None else None
    if cached is not None:
        return cached
    assert building is not None
    with building:
        with _MEMORY_LOCK:
            cached = _MEMORY.get(key)
        if cached is not None:
            return cached  # another thread built it while this one waited
        arrays = _loaded_or_built(campaign, key)
        with _MEMORY_LOCK:
            if len(_MEMORY) >= _MEMORY_LIMIT:
                _MEMORY.pop(next(iter(_MEMORY)))
            _MEMORY[key] = arrays
            _BUILDING.pop(key, None)
    return arrays


def _loaded_or_built(campaign: Campaign, key: tuple[int, str, int]) -> PoolArrays:
    path = _cache_path(key)
    if path.exists():
        try:
            return _load(path)
        except (OSError, ValueError, KeyError):
            pass
    arrays = pool_arrays_build(campaign)
    _save(arrays, path)
    return arrays


def pool_arrays_build(campaign: Campaign) -> PoolArrays:
    """Read the pool, the pooled systems' rankings, lengths and priors from the database."""
    grade_count = campaign.grade_count
    rows = list(
        PoolItem.objects.filter(campaign=campaign)
        .order_by("topic__qid", "document__docno")
        .values_list(
            "id",
            "topic_id",
            "topic__qid",
            "document_id",
            "document__docno",
            "document__length",
            "prior",
            "drawable_after",
        )
    )
    topic_ids: list[int] = []
    qids: list[str] = []
    per_topic: list[list[tuple]] = []
    for row in rows:
        if not topic_ids or topic_ids[-1] != row[1]:
            topic_ids.append(row[1])
            qids.append(row[2])
            per_topic.append([])
        per_topic[-1].append(row)
    m = len(topic_ids)
    n = max((len(items) for items in per_topic), default=0)
    item_ids = np.full((m, n), EMPTY, dtype=np.int64)
    document_ids = np.full((m, n), EMPTY, dtype=np.int64)
    lengths = np.full((m, n), np.nan)
    drawable_after = np.zeros((m, n), dtype=np.int64)
    priors = np.full((m, n, grade_count), np.nan)
    any_prior = False
    docnos: list[tuple[str, ...]] = []
    for t, items in enumerate(per_topic):
        docnos.append(tuple(item[4] for item in items))
        for slot, (item_id, _, _, document_id, _, length, prior, after) in enumerate(items):
            item_ids[t, slot] = item_id
            document_ids[t, slot] = document_id
            drawable_after[t, slot] = after
            if length is not None:
                lengths[t, slot] = float(length)
            if prior is not None and len(prior) == grade_count:
                priors[t, slot] = prior
                any_prior = True
    slot_used = item_ids >= 0
    topic_array = np.asarray(topic_ids, dtype=np.int64)
    keys_all = (np.repeat(topic_array, n).reshape(m, n) * _KEY_SHIFT + document_ids)[slot_used]
    flat_positions = np.flatnonzero(slot_used.ravel())
    order = np.argsort(keys_all, kind="stable")
    keys = keys_all[order]
    key_positions = flat_positions[order]

    systems = pooled_systems(campaign)
    depth = pool_depth_of(campaign)
    rankings = np.full((len(systems), m, depth), EMPTY, dtype=np.int64)
    scores = np.full((len(systems), m, n), np.nan)
    system_index = {system.pk: index for index, system in enumerate(systems)}
    topic_index = {topic_id: index for index, topic_id in enumerate(topic_ids)}
    positions = ranking_positions(RankingEntry.objects.filter(system__in=systems), depth).values_list(
        "system_id", "topic_id", "document_id", "position", "score"
    )
    entries = np.array(list(positions.iterator(chunk_size=20000)), dtype=float).reshape(-1, 5)
    if entries.size and m:
        s_index = np.array([system_index[int(value)] for value in entries[:, 0]], dtype=np.int64)
        t_known = np.array([topic_index.get(int(value), -1) for value in entries[:, 1]], dtype=np.int64)
        keep = t_known >= 0
        wanted = entries[keep, 1].astype(np.int64) * _KEY_SHIFT + entries[keep, 2].astype(np.int64)
        where = np.clip(np.searchsorted(keys, wanted), 0, max(keys.size - 1, 0))
        hit = keys[where] == wanted
        flat = key_positions[where][hit]
        t_index, slot = flat // n, flat % n
        s_kept = s_index[keep][hit]
        rankings[s_kept, t_index, entries[keep, 3][hit].astype(np.int64) - 1] = slot
        scores[s_kept, t_index, slot] = entries[keep, 4][hit]
    return PoolArrays(
        topic_ids=topic_array,
        topic_qids=tuple(qids),
        item_ids=item_ids,
        document_ids=document_ids,
        docnos=tuple(docnos),
        slot_used=slot_used,
        rankings=rankings,
        scores=scores,
        lengths=lengths,
        priors=priors if any_prior else None,
        system_ids=np.asarray([system.pk for system in systems], dtype=np.int64),
        system_names=tuple(system.name for system in systems),
        keys=keys,
        key_positions=key_positions,
        drawable_after=drawable_after,
    )


_ARRAY_FIELDS = (
    "topic_ids",
    "item_ids",
    "document_ids",
    "slot_used",
    "rankings",
    "scores",
    "lengths",
    "system_ids",
    "keys",
    "key_positions",
    "drawable_after",
)


def _save(arrays: PoolArrays, path: Path) -> None:
    """Write atomically (temporary file, then rename), dropping older versions of the campaign."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = path.name.rsplit("-v", 1)[0]
    for old in path.parent.glob(f"{prefix}-v*.npz"):
        if old != path:
            old.unlink(missing_ok=True)
    buffer = io.BytesIO()
    payload = {name: getattr(arrays, name) for name in _ARRAY_FIELDS}
    if arrays.priors is not None:
        payload["priors"] = arrays.priors
    payload["topic_qids"] = np.asarray(arrays.topic_qids, dtype=object)
    payload["docnos"] = np.asarray([list(row) for row in arrays.docnos] + [None], dtype=object)[:-1]
    payload["system_names"] = np.asarray(arrays.system_names, dtype=object)
    np.savez(buffer, **payload)
    temporary = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    temporary.write_bytes(buffer.getvalue())
    os.replace(temporary, path)


def _load(path: Path) -> PoolArrays:
    with np.load(path, allow_pickle=True) as data:
        fields = {name: data[name] for name in _ARRAY_FIELDS}
        priors = data["priors"] if "priors" in data.files else None
        return PoolArrays(
            **fields,
            priors=priors,
            topic_qids=tuple(str(qid) for qid in data["topic_qids"]),
            docnos=tuple(tuple(row) for row in data["docnos"]),
            system_names=tuple(str(name) for name in data["system_names"]),
        )


def pool_arrays_forget(campaign_id: int | None = None) -> None:
    """Drop this process's in-memory copies (tests; after deleting a campaign)."""
    with _MEMORY_LOCK:
        for key in [key for key in _MEMORY if campaign_id is None or key[0] == campaign_id]:
            _MEMORY.pop(key)
