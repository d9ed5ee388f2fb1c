"""Why a claim of the source paper fails or is partial on udora's release: the verdicts of
the registered experiments of docs/paper_disagreements.md (its sections 3 and 6 hold the
hypotheses, rules, numbers and commands), one entry per claim or observation, shown by
docs/paper_reproduction.md beside the claims' verdicts.

Written after the experiments ran; the pass rules (:mod:`udora.experiments.publish.claims`)
were not changed by them. A failing or partial claim without an entry is shown as "open:
not diagnosed", never left out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["defect fixed", "finding", "explained", "open"]
# defect fixed: udora deviated from the paper's description and now follows it;
# finding: a faithful implementation fails it (the experiments rule out the candidates);
# explained: a registered experiment explains it by a choice the paper leaves unstated;
# open: not settled by the experiments run (what was tried is said).


@dataclass(frozen=True)
class Why:
    """One claim's or observation's diagnosis: its ``status``, what the experiments
    showed (one sentence or two, with the numbers) and the section of
    docs/paper_disagreements.md that holds them."""

    status: Status
    text: str
    section: str


WHY: dict[str, Why] = {
    "C1": Why(
        "finding",
        "A near-miss on the rule's band, not seed noise by the registered test: the range "
        "of the other 13 methods' mean-vs-f Spearman is 0.121-0.127 against 0.12 for all "
        "three fit seeds of dkl and nn_bagging (E-N1), and neither DKL's full-batch "
        "likelihood (E-DKL) nor the paper's kernels (E-P1) move it; P(PASS) under "
        "resampling presets and seeds is 0.43-0.49 in every replicate.",
        "6.4",
    ),
    "C6": Why(
        "explained",
        "By FSP-Laplace's rank, which the paper leaves unstated (DEV-8): at the full rank "
        "of its 64 context points fsp_laplace is the best neural method by nAURC_eu and "
        "P(C6 passes) rises from 0.059 to 0.449 (E-F1); nn_dropout stays 6th-7th of 8 "
        "under every dropout arm. udora keeps rank 20 (no paper value to follow).",
        "6.4",
    ),
    "C15": Why(
        "open",
        "Half explained: FSP-Laplace's rank (E-F1) moves fsp_laplace into the top 5 "
        "(mean EU rank 6.57 to 4.57); CatBoost-KGB (9th) is not moved by the paper's "
        "kernels (E-P1) and its retuning by RMSE is E-K1.",
        "6.4",
    ),
}

OBSERVATIONS: dict[str, tuple[str, Why]] = {
    "O1": (
        "MC dropout ranks 14th of 15 on EU Spearman",
        Why(
            "finding",
            "100 passes instead of the paper's 10 raise its EU Spearman by 0.067 on all 7 "
            "held-out presets (E-D1): a third of the gap is the sampling noise of a "
            "10-pass variance; a higher rate (E-D2) or a narrower network (E-D3) does not "
            "help, and it stays 6th of the 8 neural methods by nAURC_eu.",
            "6.4",
        ),
    ),
    "O2": (
        "SWAG's EU Spearman is about 0 on abalone and kin8nm",
        Why(
            "open",
            "kin8nm: the activation; with ReLU its EU Spearman is 0.346 against 0.098 with "
            "tanh, the paper's choice (E-S4). The burn-in, weight decay and number of "
            "samples do not explain either preset (E-S1-E-S3); abalone is unexplained.",
            "6.4",
        ),
    ),
}

NOT_DIAGNOSED = Why("open", "Not diagnosed yet.", "")


def why_lines(verdicts: list[tuple[str, str]]) -> list[str]:
    """Markdown lines of the "Why" section for ``verdicts`` [(claim id, verdict)]: one
    bullet per FAIL or PARTIAL claim with its entry of :data:`WHY` (or
    :data:`NOT_DIAGNOSED`), then the observations."""
    lines = []
    for claim, verdict in verdicts:
        if verdict not in ("FAIL", "PARTIAL"):
            continue
        why = WHY.get(claim, NOT_DIAGNOSED)
        lines.append(_bullet(f"{claim} ({verdict})", why))
    for key, (what, why) in OBSERVATIONS.items():
        lines.append(_bullet(f"{key}: {what}", why))
    return lines


def _bullet(head: str, why: Why) -> str:
    where = f" (docs/paper_disagreements.md, {why.section})" if why.section else ""
    return f"- **{head}**: {why.status}. {why.text}{where}"
