"""Meta-evaluation on the stored predictions: each (preset, seed) cell's task rebuilt once
(:func:`load_cells`) to compute what result.json lacks. That is the block energy and
variogram scores (:func:`block_metrics`) and the observable metrics on random subsets of
the pool (:func:`subsample_taus`); the interval AUC on the oracle's exceedance task is
:mod:`udora.experiments.meta.iauc`'s, the rankings :mod:`udora.experiments.meta.taus`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.meta.pool import CellPool
from udora.experiments.meta.taus import OBSERVABLE, ORACLE, SIZE_COLUMNS, goodness
from udora.experiments.results.aggregate import kendall_tau, kendall_tau_rows
from udora.experiments.run.records import RunRecord, finished_run, load_predictions

# Multivariate scores over blocks of nearby pool points (udora.scoring.multivariate): not
# in result.json (they need the covariates); :func:`block_metrics` computes them.
BLOCK_SIZE = 5
MAX_BLOCKS = 1000


@dataclass(frozen=True)
class Cell:
    """One (preset, seed) of a results table with what rescoring needs: its ok runs (one
    row per config), the task rebuilt from their recorded preset, and each run's stored
    prediction arrays (``mean``, ``aleatoric``, ``epistemic`` (N,), ``member_means``
    (K, N) if any), in the order of the rows; and ``blocks`` (B, 5), the blocks of nearby
    pool points of the multivariate scores (:func:`udora.scoring.multivariate.nearest_blocks`,
    ``B = min(N // 5, 1000)`` anchors drawn by the Generator of the run seed)."""

    preset: str
    seed: int
    runs: pd.DataFrame
    task: Any
    predictions: list[dict[str, np.ndarray]]
    blocks: np.ndarray
    # each run's per-block scores by run folder, computed once (:func:`_block_values`)
    scored_blocks: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)

    def where(self, keep: np.ndarray) -> Cell:
        """The same cell with only the runs where ``keep`` (one bool per run) holds."""
        preds = [p for p, k in zip(self.predictions, keep, strict=True) if k]
        return Cell(
            self.preset,
            self.seed,
            self.runs[keep],
            self.task,
            preds,
            self.blocks,
            self.scored_blocks,
        )


def load_cells(
    table: pd.DataFrame,
    min_methods: int = 4,
    data_dir: str | None = None,
    progress: Callable[[str], None] | None = None,
    on_cell: Callable[[int, Cell], None] | None = None,
) -> list[Cell]:
    """Every (preset, seed) of ``table``'s ok runs with at least ``min_methods`` configs,
    its task built once (:class:`Cell`); the input of :func:`subsample_taus` and
    :func:`iauc_regions`.

    A cell reads its task's stored oracle arrays; only a results folder from before they
    were stored rebuilds the task from the data under ``data_dir``. ``on_cell(k, cell)``
    is called as the k-th cell is ready.

    Raises:
        ValueError: a rebuilt task's data table (under ``data_dir``, default the loader's)
            is not the one the runs recorded (its sha256): its targets would not be theirs.
    """
    from udora.scoring.multivariate import nearest_blocks

    cells = []
    ok = table[table["status"] == "ok"]
    for (preset, run_seed), runs in ok.groupby(["preset", "seed"], sort=True):
        if len(runs) < min_methods:
            continue
        checked = [finished_run(d) for d in runs["run_dir"]]  # checked once, files too
        records = [f.record for f in checked]
        used = {(r.data_source or {}).get("sha256") for r in records}
        record = records[0]
        task = _stored_task(runs["run_dir"].iloc[0], record)
        if task is None:  # a results folder from before tasks were stored: build it
            from udora.oracle.preset import Preset
            from udora.oracle.task import build_task  # imports JAX: only when needed

            if progress is not None:
                progress(f"rebuilding the task of {preset}, seed {run_seed}")
            task = build_task(
                Preset.model_validate(record.preset_config), int(run_seed), data_dir=data_dir
            )
        found = task.meta.get("data_source") or {}
        if used != {found.get("sha256")}:  # other data: other f, y and targets
            ran = sorted(
                f"{(r.data_source or {}).get('location')} (sha256 "
                f"{str((r.data_source or {}).get('sha256'))[:12]})"
                for r in records
            )
            raise UserError(
                f"{preset}, seed {run_seed}: the runs used {', '.join(dict.fromkeys(ran))}, "
                f"but the data found now is {found.get('location')} (sha256 "
                f"{str(found.get('sha256'))[:12]}); give --data-dir as the runs had it"
            )
        preds = [load_predictions(f) for f in checked]
        N = task.X.shape[0]
        for found, pred in zip(checked, preds, strict=True):  # a task stored for another pool
            if pred["mean"].shape != (N,):
                raise UserError(
                    f"{found.folder / 'predictions.npz'}: 'mean' has shape "
                    f"{pred['mean'].shape}, but the task of {preset}, seed {run_seed} has "
                    f"{N} pool rows"
                )
        blocks = nearest_blocks(
            task.X,
            min(N // BLOCK_SIZE, MAX_BLOCKS),
            BLOCK_SIZE,
            np.random.default_rng(int(run_seed)),
        )
        cells.append(Cell(str(preset), int(run_seed), runs, task, preds, blocks))
        if on_cell is not None:  # e.g. start its rescoring while the next cell loads
            on_cell(len(cells) - 1, cells[-1])
    return cells


def _stored_task(run_dir: str, record: RunRecord) -> Any:
    """The task's arrays stored beside the runs (:mod:`udora.experiments.tasks.arrays`),
    or None (older results folders, external runs without a task hash)."""
    from udora.experiments.tasks import arrays as oracle_arrays

    if record.task_hash is None:
        return None
    root = oracle_arrays.results_root(run_dir)
    task = oracle_arrays.load(root, record.task_hash)
    stored = oracle_arrays.checksum(root, record.task_hash)
    if task is not None and record.oracle_sha256 not in (None, stored):
        npz, _ = oracle_arrays.paths(root, record.task_hash)
        raise UserError(
            f"{npz}: not the arrays {run_dir} was scored against (SHA-256 {str(stored)[:12]}, "
            f"the run recorded {record.oracle_sha256[:12]}; edited?); delete it and its .json "
            "to rebuild the task"
        )
    return task


def _block_rng(cell: Cell, config: str) -> np.random.Generator:
    """The noise draws of one config's block forecast: from the run seed and the config's
    name, so they never depend on which other configs the folder holds."""
    import zlib

    return np.random.default_rng([cell.seed, zlib.crc32(config.encode()), 0])


def _block_values(cell: Cell, i: int) -> dict[str, np.ndarray]:
    """Run ``i``'s energy and variogram score on each of the cell's blocks, (B,) each (NaN
    without members); computed once per run (the whole-pool score and every subset's
    average the same values)."""
    from udora.scoring.multivariate import block_score_values

    run_dir = str(cell.runs["run_dir"].iloc[i])
    if run_dir not in cell.scored_blocks:
        pred, B = cell.predictions[i], cell.blocks.shape[0]
        if pred.get("member_means") is None:
            nan = np.full(B, np.nan)
            cell.scored_blocks[run_dir] = {"energy_score_block": nan, "variogram_score_block": nan}
        else:
            rng = _block_rng(cell, str(cell.runs["config"].iloc[i]))
            cell.scored_blocks[run_dir] = block_score_values(
                cell.task.y, pred["member_means"], pred["aleatoric"], cell.blocks, rng=rng
            )
    return cell.scored_blocks[run_dir]


def cell_block_values(k: int, cell: Cell) -> dict[str, dict[str, np.ndarray]]:
    """Every run's :func:`_block_values` of one cell, by run folder."""
    del k
    return {str(d): _block_values(cell, i) for i, d in enumerate(cell.runs["run_dir"])}


def cell_early(k: int, cell: Cell) -> tuple[dict[str, dict[str, np.ndarray]], list[dict]]:
    """One cell's :func:`cell_block_values` and interval-AUC rows, as a worker computes
    them while the next cells load (:func:`udora.experiments.meta.outputs.write_meta`)."""
    from udora.experiments.meta.iauc import IAUC_LEVELS, cell_regions

    return cell_block_values(k, cell), cell_regions(k, cell, IAUC_LEVELS, 0.9)


def block_metrics(cells: list[Cell]) -> pd.DataFrame:
    """The energy and variogram scores over each cell's blocks for every run with members
    (:func:`udora.scoring.multivariate.block_scores`; NaN for runs without); values a
    worker already computed (:func:`cell_early`) are reused.

    Returns:
        One row per run: ``run_dir``, ``energy_score_block``, ``variogram_score_block``.
    """
    rows = []
    for cell in cells:
        for i, run_dir in enumerate(cell.runs["run_dir"]):
            means = {k: float(np.mean(v)) for k, v in _block_values(cell, i).items()}
            rows.append({"run_dir": run_dir, **means})
    return pd.DataFrame(rows, columns=["run_dir", "energy_score_block", "variogram_score_block"])


def with_block_metrics(table: pd.DataFrame, cells: list[Cell]) -> pd.DataFrame:
    """``table`` with the columns of :func:`block_metrics` (NaN for runs not in a cell)."""
    extra = block_metrics(cells)
    merged = table.drop(columns=[c for c in extra.columns[1:] if c in table.columns])
    return merged.merge(extra, on="run_dir", how="left", validate="many_to_one").set_axis(
        table.index
    )


def subsample_taus(
    cells: list[Cell],
    sizes: tuple[int, ...] = (50, 200, 1000),
    repeats: int = 20,
    seed: int = 0,
    oracle: str = "spearman_eu",
    min_methods: int = 4,
    jobs: int = 1,
) -> pd.DataFrame:
    """How many evaluation points an observable metric needs to rank like the oracle.

    In each cell (:func:`load_cells`), each config's stored prediction is scored again on
    ``repeats`` random subsets of the pool of each size (a size at least N is the whole
    pool, once), by the observable metrics only (:func:`udora.scoring.observable_arrays`);
    the observable rankings on the subset are compared (Kendall's tau-b) with the
    ``oracle`` metric's ranking on the whole pool, as stored. The block scores average
    ``size // 5`` of the cell's blocks instead (all of them past N), each block scored
    once with the noise draws of the whole-pool score (:func:`block_metrics`). Subsets are
    drawn from the Generator of ``[seed, cell index, size]``. With ``jobs`` > 1 the cells are
    shared among that many spawned processes; the rows are the same.

    Returns:
        One row per (preset, seed, observable, size) with the mean ``tau`` over repeats
        and ``points`` (the subset size used).
    """
    with CellPool(jobs) as pool:
        return submit_subsample_taus(cells, pool, sizes, repeats, seed, oracle, min_methods)()


def submit_subsample_taus(
    cells: list[Cell], pool: CellPool, *args: Any
) -> Callable[[], pd.DataFrame]:
    """Start :func:`subsample_taus` (``args``: its ``sizes`` to ``min_methods``) in
    ``pool``; the function returned waits for it and gives its frame."""
    futures = [pool.submit(_cell_subsample_taus, k, cell, *args) for k, cell in enumerate(cells)]

    def collect() -> pd.DataFrame:
        rows = [row for future in futures for row in future.result()]
        return pd.DataFrame(rows, columns=list(SIZE_COLUMNS))

    return collect


def _cell_subsample_taus(
    k: int,
    cell: Cell,
    sizes: tuple[int, ...],
    repeats: int,
    seed: int,
    oracle: str,
    min_methods: int,
) -> list[dict]:
    """The rows of :func:`subsample_taus` for the ``k``-th cell."""
    rows: list[dict] = []
    cell = cell.where(np.isfinite(ORACLE[oracle](cell.runs).to_numpy()))
    if len(cell.runs) < min_methods:
        return rows
    truth = ORACLE[oracle](cell.runs).to_numpy()
    N = cell.task.X.shape[0]
    blocks = [_block_values(cell, i) for i in range(len(cell.predictions))]
    for size in sizes:
        rng = np.random.default_rng([seed, k, size])
        B = cell.blocks.shape[0]
        if size >= N:
            points, picked = np.arange(N)[None], np.arange(B)[None]
        else:
            drawn = [
                (
                    rng.choice(N, size=size, replace=False),
                    rng.choice(B, size=max(1, min(B, size // BLOCK_SIZE)), replace=False),
                )
                for _ in range(repeats)
            ]
            points, picked = (np.stack(part) for part in zip(*drawn, strict=True))
        # one vectorised scoring per run over all subsets; rows (subset, run) as before
        per_run = [
            _score_subsets(cell.task, p, points)
            | {name: np.mean(v[picked], axis=1) for name, v in blocks[i].items()}
            for i, p in enumerate(cell.predictions)
        ]
        scored = pd.DataFrame(
            {name: np.stack([r[name] for r in per_run], axis=1).ravel() for name in per_run[0]}
        )
        seen = goodness(scored, OBSERVABLE)  # one frame for every subset: pandas once
        taus: dict[str, list[float]] = {}
        n = len(cell.predictions)
        for obs in seen:
            values = seen[obs].to_numpy().reshape(len(points), n)
            whole = np.all(np.isfinite(values), axis=1)  # these rows in one pass, in order
            fast = iter(kendall_tau_rows(values[whole], truth))
            for row, all_fine in zip(values, whole, strict=True):
                fine = np.isfinite(row)
                if fine.sum() >= min_methods:
                    tau = next(fast) if all_fine else kendall_tau(row[fine], truth[fine])
                    taus.setdefault(obs, []).append(tau)
        for obs, values in taus.items():
            rows.append(
                {
                    "preset": cell.preset,
                    "seed": cell.seed,
                    "observable": obs,
                    "size": size,
                    "points": min(size, N),
                    "tau": float(np.nanmean(values)),
                }
            )
    return rows


def _score_subsets(task, prediction: dict, idx: np.ndarray) -> dict[str, np.ndarray]:
    """The observable metrics of one prediction on each row of pool points ``idx`` (R, M),
    (R,) each (:func:`udora.scoring.observable_arrays` on (R, M) arrays: the oracle's are
    not needed on subsets)."""
    from udora.scoring import observable_arrays

    members = prediction.get("member_means")
    return observable_arrays(
        y=task.y[idx],
        mean=prediction["mean"][idx],
        aleatoric=prediction["aleatoric"][idx],
        epistemic=prediction["epistemic"][idx],
        member_means=None if members is None else members[:, idx],
    )
