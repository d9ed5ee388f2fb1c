"""The swap and the claims' bootstrap (experiments.publish.disagreements) on the shipped
release table: a swapped row is what the claims read, a replicate resamples what it says
(the same seed draw for every method), and a claim decided on every seed has a pass
probability of exactly 0 or 1 when only seeds are resampled."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from udora.errors import UserError
from udora.experiments.publish import disagreements as dis
from udora.experiments.publish.artefact import primary_rows, read_release, release_folder
from udora.experiments.publish.claim_data import ClaimData
from udora.experiments.publish.reproduction import evaluate


@pytest.fixture(scope="module")
def release() -> pd.DataFrame:
    return read_release(release_folder("release"))[0]


def _new_rows(release: pd.DataFrame, method: str, shift: float) -> pd.DataFrame:
    rows = dis.claim_rows(release)
    rows = rows[(rows["method"] == method) & (rows["suite"] == "heldout")].copy()
    rows["spearman_eu"] += shift
    return rows.assign(config=f"{method}[dropout=0.35]")  # as a results folder labels it


def test_a_swapped_row_is_what_the_claims_read(release):
    base = dis.claim_rows(release)
    swapped = dis.swap(release, _new_rows(release, "nn_dropout", 0.5))
    assert len(swapped) == len(base)
    before, after = ClaimData(base), ClaimData(swapped)
    assert after.M("heldout", "spearman_eu")["nn_dropout"] == pytest.approx(
        before.M("heldout", "spearman_eu")["nn_dropout"] + 0.5, abs=1e-12
    )
    others = [m for m in before.M("heldout", "spearman_eu").index if m != "nn_dropout"]
    pd.testing.assert_series_equal(
        before.M("heldout", "spearman_eu")[others], after.M("heldout", "spearman_eu")[others]
    )
    assert (
        after.M("dev", "spearman_eu")["nn_dropout"] == before.M("dev", "spearman_eu")["nn_dropout"]
    )


def test_the_swap_refuses_rows_it_cannot_place(release):
    seeded = _new_rows(release, "swag", 0.0).assign(method_seed=1.0)
    with pytest.raises(UserError, match="method_seed"):
        dis.swap(release, seeded)
    picked = dis.swap(release, pd.concat([seeded, seeded.assign(method_seed=2.0)]), 1)
    assert len(picked) == len(dis.claim_rows(release))
    # the picked replicate is the method's rows now: the bootstrap's claim rows keep it
    assert len(dis.claim_rows(picked)) == len(picked)
    assert (dis.claim_rows(picked)["method"] == "swag").sum() == (
        dis.claim_rows(release)["method"] == "swag"
    ).sum()
    with pytest.raises(UserError, match="presets not in the release: nowhere"):
        dis.swap(release, _new_rows(release, "swag", 0.0).assign(preset="nowhere"))
    with pytest.raises(UserError, match="methods not in the release: mine"):
        dis.swap(release, _new_rows(release, "swag", 0.0).assign(method="mine"))
    two = pd.concat(
        [_new_rows(release, "swag", 0.0), _new_rows(release, "swag", 0.1).assign(config="b")]
    )
    with pytest.raises(UserError, match=r"swag on .* has several configs"):
        dis.swap(release, two)


@pytest.mark.parametrize("mode", ["presets", "seeds", "both"])
def test_a_replicate_resamples_what_its_mode_says(release, mode):
    rows = dis.claim_rows(release)
    held = rows[rows["suite"] == "heldout"]
    out = dis.replicate(rows, np.random.default_rng(3), mode)
    pd.testing.assert_frame_equal(
        out[out["suite"] != "heldout"].reset_index(drop=True),
        rows[rows["suite"] != "heldout"].reset_index(drop=True),
    )
    drawn = out[out["suite"] == "heldout"]
    assert drawn["preset"].nunique() == held["preset"].nunique()
    assert len(drawn) == len(held) or mode != "seeds"
    # every (drawn preset, seed) is one task for every method: the pairing is kept
    assert (drawn.groupby(["preset", "seed"])["task_hash"].nunique() == 1).all()
    if mode == "presets":
        assert sorted(drawn["seed"].unique()) == sorted(held["seed"].unique())
        origin = drawn["preset"].str.split("#").str[0]
        kept = held.set_index(["preset", "method", "seed"])["spearman_eu"]
        values = kept.reindex(pd.MultiIndex.from_arrays([origin, drawn["method"], drawn["seed"]]))
        np.testing.assert_array_equal(values.to_numpy(), drawn["spearman_eu"].to_numpy())


def test_a_claim_decided_on_every_seed_passes_with_probability_0_or_1(release):
    rows = dis.claim_rows(release)
    first = rows[rows["seed"] == 0]
    # every seed a copy of seed 0: resampling seeds cannot change any verdict
    flat = pd.concat([first.assign(seed=s) for s in (0, 1, 2)], ignore_index=True)
    found = {c.id: v.verdict for c, v in evaluate(flat)}
    probs = dis.pass_probability(flat, ("c1", "c2", "c11"), n_boot=4, mode="seeds", inner=50)
    for claim in ("c1", "c2", "c11"):
        expected = 1.0 if found[claim.upper()] == "PASS" else 0.0
        assert probs.loc[claim, "p_pass"] == expected
    assert probs[["PASS", "PARTIAL", "FAIL", "ERROR"]].sum(axis=1).eq(4).all()


def test_unknown_claims_and_modes_are_refused(release):
    with pytest.raises(UserError, match="unknown claims c99"):
        dis.pass_probability(release, ("c99",), n_boot=1)
    with pytest.raises(UserError, match="mode must be one of"):
        dis.pass_probability(release, ("c1",), n_boot=1, mode="tasks")
    dev_only = release[release["suite"] == "dev"]
    with pytest.raises(UserError, match="no rows of the heldout suite"):
        dis.pass_probability(dev_only, ("c1",), n_boot=1)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_command_swaps_a_results_folder_and_bootstraps(release, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    new = _new_rows(release, "nn_dropout", 0.5)
    monkeypatch.setattr(
        "udora.experiments.results.store.load_runs", lambda folder: (new, {}), raising=True
    )
    args = ["release", "disagreements", "release", "--swap", str(tmp_path), "--boot", "2"]
    out = CliRunner().invoke(app, [*args, "--claims", "c6", "--inner", "20"])
    assert out.exit_code == 0, out.output
    assert "| claim | release | swapped | ours |" in out.output
    assert "| C6 | FAIL |" in out.output
    assert "bootstrap: 2 replicates, mode both, seed 48, inner 20" in out.output
    assert "| c6 |" in out.output
    bad = CliRunner().invoke(app, ["release", "disagreements", str(tmp_path)])
    assert bad.exit_code != 0 and "not a release folder" in bad.output


def test_a_paired_effect_against_its_baseline_and_the_registered_threshold(release):
    rows = dis.claim_rows(release)
    base = rows[(rows["method"] == "nn_dropout") & (rows["suite"] == "heldout")]
    presets = sorted(base["preset"].unique())
    up = dict.fromkeys(presets[:4], 0.1) | dict.fromkeys(presets[4:], -0.01)
    new = base.assign(spearman_eu=base["spearman_eu"] + base["preset"].map(up))
    # sigma_m by hand: the release's fit-seed replicates of nn_dropout@tuned, the sd over
    # fit seeds (the run at its task seed is fit seed 0) per (preset, task seed), median
    own = primary_rows(release)
    ok = own[(own["status"] == "ok") & (own["config_base"] == "nn_dropout@tuned")]
    varied = ok[ok.groupby(["preset", "seed"])["method_seed"].transform("count") > 0]
    sigma = float(varied.groupby(["preset", "seed"])["spearman_eu"].std().median())
    got = dis.paired_effects(new, base, release, ("spearman_eu",)).iloc[0]
    assert got["R"] == 21 and got["presets"] == 7 and got["suite"] == "heldout"
    assert got["delta"] == pytest.approx((4 * 0.1 - 3 * 0.01) / 7, abs=1e-12)
    assert got["sigma"] == pytest.approx(sigma, rel=1e-12)
    assert got["threshold"] == pytest.approx(2 * np.sqrt(2) * sigma / np.sqrt(21), rel=1e-12)
    assert got["agree"] == 4 and got["passes"] == "no"  # above T, but 4 of 7 presets < 5
    more = dict.fromkeys(presets[:5], 0.1) | dict.fromkeys(presets[5:], -0.01)
    new = base.assign(spearman_eu=base["spearman_eu"] + base["preset"].map(more))
    assert dis.paired_effects(new, base, release, ("spearman_eu",)).iloc[0]["passes"] == "yes"
    # sigma_t instead: the median over presets of the sd over task seeds of the release
    spread = float(ok[ok["method_seed"].isna()].groupby("preset")["spearman_eu"].std().median())
    by_task = dis.paired_effects(new, base, release, ("spearman_eu",), noise="task").iloc[0]
    assert by_task["sigma"] == pytest.approx(spread, rel=1e-12)
    # two suites are two effects, each with its own R and quorum
    dev = rows[(rows["method"] == "nn_dropout") & (rows["preset"].isin(["abalone", "kin8nm"]))]
    both = pd.concat([base, dev])
    split = dis.paired_effects(
        both.assign(spearman_eu=both["spearman_eu"] + 0.5), both, release, ("spearman_eu",)
    )
    assert sorted(zip(split["suite"], split["R"], split["presets"], strict=True)) == [
        ("dev", 6, 2),
        ("heldout", 21, 7),
    ]
    # no noise floor for the method: not a silent "no"
    lone = dis.paired_effects(
        new.assign(method="mine"), base.assign(method="mine"), release, ("spearman_eu",)
    ).iloc[0]
    assert lone["passes"] == "n/a"
    assert [dis.sign_quorum(n) for n in (1, 2, 7, 9)] == [1, 2, 5, 7]
    # a method the baseline arm never ran is compared with the release's own rows of it
    # (not its method_seed replicates): here those are the rows the arm was made from
    assert got["baseline"] == "arm"
    fallback = dis.paired_effects(new, base.assign(method="swag"), release, ("spearman_eu",))
    assert fallback.iloc[0]["baseline"] == "release" and fallback.iloc[0]["R"] == 21
    assert fallback.iloc[0]["delta"] == pytest.approx((5 * 0.1 - 2 * 0.01) / 7, abs=1e-12)
    # only its claim config: another config's rows of the method are never averaged in
    tuned = release[release["config"] == "nn_dropout@tuned"]
    other = tuned.assign(config="nn_dropout@other", config_base="nn_dropout@other")
    widened = pd.concat([release, other.assign(spearman_eu=other["spearman_eu"] + 5.0)])
    again = dis.paired_effects(new, base.assign(method="swag"), widened, ("spearman_eu",))
    assert again.iloc[0]["delta"] == pytest.approx(fallback.iloc[0]["delta"], abs=1e-12)
    # a metric the release's rows lack (a variant's, not derived on them) is named, and so
    # is one its claim config holds no value of
    with pytest.raises(UserError, match="rows of nn_dropout@tuned have no 'rr50_eu'"):
        dis.paired_effects(
            new.assign(rr50_eu=0.0), base.assign(method="swag", rr50_eu=0.0), release, ("rr50_eu",)
        )
    empty = release.assign(
        spearman_eu=release["spearman_eu"].where(release["method"] != "nn_dropout")
    )
    with pytest.raises(UserError, match="rows of nn_dropout@tuned have no 'spearman_eu'"):
        dis.paired_effects(new, base.assign(method="swag"), empty, ("spearman_eu",))
    # two configs of one method on one task are refused, never averaged
    other_config = new.assign(config="nn_dropout@other")
    with pytest.raises(UserError, match="the new rows hold several configs of nn_dropout"):
        dis.paired_effects(pd.concat([new, other_config]), base, release, ("spearman_eu",))
    # a release without method_seed replicates has no noise floor: n/a, not an error
    unseeded = release[release["method_seed"].isna()]
    alone = dis.paired_effects(new, base, unseeded, ("spearman_eu",)).iloc[0]
    assert alone["passes"] == "n/a" and np.isnan(alone["sigma"]) and alone["R"] == 21
    with pytest.raises(UserError, match="nor the release has an ok run of mine"):
        dis.paired_effects(new.assign(method="mine"), base, release, ("spearman_eu",))


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_command_compares_an_arm_with_its_baseline_arm(release, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    rows = dis.claim_rows(release)
    base = rows[(rows["method"] == "nn_dropout") & (rows["suite"] == "heldout")]
    base = base.assign(config="nn_dropout@tuned")
    arm = base.assign(spearman_eu=base["spearman_eu"] + 0.2, config="nn_dropout[dropout=0.35]")
    folders = {str(tmp_path / "base"): base, str(tmp_path / "arm"): arm}
    monkeypatch.setattr(
        "udora.experiments.results.store.load_runs", lambda folder: (folders[str(folder)], {})
    )
    args = ["release", "disagreements", "release", "--swap", str(tmp_path / "arm")]
    args += ["--against", str(tmp_path / "base"), "--claims", "c1", "--boot", "2", "--inner", "5"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "paired effect against the baseline arm" in out.output
    assert "| nn_dropout | heldout | spearman_eu | arm | 21 | 0.2" in out.output
    assert "| claim | baseline | swapped | ours |" in out.output
    alone = CliRunner().invoke(app, ["release", "disagreements", "release", "--against", "x"])
    assert alone.exit_code != 0 and "give --swap ARM too" in alone.output
    for lone in (["--effect", "nll"], ["--method-seed", "1"]):
        bad = CliRunner().invoke(app, ["release", "disagreements", "release", *lone])
        assert bad.exit_code != 0 and "give --" in bad.output
