"""``--set`` parsed once into typed parts (method fields, task fields, method seed, scoped
fields), and the run and task hashes of udora before the parts existed, pinned."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from udora.experiments.grid.bench import make_grid
from udora.experiments.run.checks import UsageError
from udora.experiments.run.overrides import Overrides
from udora.experiments.run.spec import RunSpec, config_label, resolve


def test_each_key_lands_in_its_own_part():
    over = Overrides.parse(
        [
            "width=64",
            "activation=tanh",
            "preset.n_train=300",
            "preset.noise.std_min=0.2",
            "preset.shift=[0.5,0.5,0,0,0]",
            "method_seed=3",
            "nn_ensemble.n_members=4",
        ]
    )
    assert over.method == {"width": 64, "activation": "tanh"}
    assert over.task == {"n_train": 300, "noise.std_min": 0.2, "shift": [0.5, 0.5, 0, 0, 0]}
    assert over.method_seed == 3 and isinstance(over.method_seed, int)
    assert over.scoped == {"nn_ensemble": {"n_members": 4}}
    assert isinstance(over.method["width"], int) and isinstance(over.task["n_train"], int)


def test_flat_gives_back_the_users_keys():
    flat = {
        "width": 64,
        "preset.n_train": 300,
        "preset.truth": "features",
        "preset.truth.features": 256,
        "method_seed": 0,
        "blr.alpha": 0.5,
    }
    over = Overrides.from_flat(flat)
    assert over.flat() == flat
    assert Overrides.from_flat(over.flat()) == over
    assert Overrides().flat() == {} and not Overrides() and Overrides(method_seed=0)


def test_scoped_fields_reach_their_method_only_and_win():
    over = Overrides.from_flat({"width": 32, "nn_ensemble.width": 64, "preset.n_train": 50})
    names = ["nn_ensemble", "nn_bagging"]
    assert over.for_method("nn_ensemble", names) == Overrides({"width": 64}, {"n_train": 50})
    assert over.for_method("nn_bagging", names) == Overrides({"width": 32}, {"n_train": 50})
    with pytest.raises(UsageError, match=r"nn_ensemble\.width: nn_ensemble is not among"):
        over.for_method("blr", ["blr"])


def test_updated_lets_the_later_part_win_field_by_field():
    base = Overrides({"width": 16, "blocks": 2}, {"n_train": 100}, 1, {"blr": {"alpha": 1.0}})
    top = Overrides({"width": 64}, {"shift": [1, 0]}, None, {"blr": {"beta": 2.0}})
    assert base.updated(top) == Overrides(
        {"width": 64, "blocks": 2},
        {"n_train": 100, "shift": [1, 0]},
        1,
        {"blr": {"alpha": 1.0, "beta": 2.0}},
    )
    assert base.updated(Overrides(method_seed=5)).method_seed == 5
    assert base.without_seed() == dataclasses.replace(base, method_seed=None)


def test_frozen_copied_and_picklable():
    fields = {"width": 64}
    over = Overrides(method=fields, method_seed=2)
    fields["width"] = 8  # the caller's dict is not the override's
    assert over.method == {"width": 64}
    with pytest.raises(dataclasses.FrozenInstanceError):
        over.method_seed = 3
    with pytest.raises(TypeError):
        over.method["width"] = 8
    assert pickle.loads(pickle.dumps(over)) == over


@pytest.mark.parametrize("bad", ["x", -1, True, 1.5])
def test_a_bad_method_seed_is_refused_when_parsed(bad):
    with pytest.raises(UsageError, match=r"--set method_seed=.*non-negative integer"):
        Overrides.from_flat({"method_seed": bad})


def test_a_run_spec_reads_flat_keys_once_and_scopes_its_own_method():
    spec = RunSpec("concrete", "nn_ensemble", 0, {"nn_ensemble.width": 64, "preset.n_train": 9})
    assert spec.overrides == Overrides({"width": 64}, {"n_train": 9})
    assert config_label(spec.overrides) == "preset.n_train=9,width=64"


# (preset, method, seed, --set) -> (config hash, task hash, label), computed by udora
# before overrides had typed parts (one flat dict told apart by prefixes), on the real
# concrete table; the typed parts must reach exactly the same identities and labels.
PINNED = [
    (("concrete", "nn_ensemble", 0, {}), ("91539a4c64", "52a1b398cf", "default")),
    (("concrete", "nn_ensemble", 0, {"width": 64}), ("a46a2710e6", "52a1b398cf", "width=64")),
    (
        ("concrete", "nn_ensemble", 1, {"preset.n_train": 300, "width": 64}),
        ("ba3ac5cebf", "85c739e4b7", "preset.n_train=300,width=64"),
    ),
    (
        ("concrete", "nn_ensemble", 0, {"method_seed": 3}),
        ("b078dfc377", "52a1b398cf", "method_seed=3"),
    ),
    (
        ("concrete", "blr", 2, {"preset.truth": "warped"}),
        ("c3215d20da", "1954c25a94", 'preset.truth="warped"'),
    ),
    (
        ("concrete", "blr", 0, {"preset.truth": "features", "preset.truth.features": 256}),
        ("35fd8b8f74", "0016a72407", 'preset.truth="features",preset.truth.features=256'),
    ),
    (
        ("concrete", "nn_ensemble", 0, {"preset.shift": [0.4, 0.3, 0.2, 0.1, 0.0]}),
        ("8d52010a62", "d6a9fd0cae", "preset.shift=[0.4,0.3,0.2,0.1,0.0]"),
    ),
]


@pytest.mark.parametrize(("given", "pinned"), PINNED, ids=[p[1][2] for p in PINNED])
def test_run_and_task_hashes_are_those_of_before(shared_data, given, pinned):
    run = resolve(RunSpec(*given), shared_data)
    assert (run.config_hash, run.task_hash, run.label) == pinned
    assert run.rel_dir.parts[2] == pinned[0]


def test_a_scoped_grid_key_reaches_the_hash_of_the_plain_run(shared_data):
    over = Overrides.parse(["nn_ensemble.width=64", "preset.n_train=300"])
    nn, blr = make_grid(["concrete"], ["nn_ensemble", "blr"], [1], over, data_dir=shared_data)
    assert (nn.config_hash, nn.task_hash) == ("ba3ac5cebf", "85c739e4b7")
    assert nn.label == "preset.n_train=300,width=64" and blr.label == "preset.n_train=300"
    assert blr.task_hash == nn.task_hash and blr.overrides == Overrides(task={"n_train": 300})
