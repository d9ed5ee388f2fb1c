"""The method contract as checks that run on any registered or installed method.

``check_method("knn")`` (a registered name, or a ``UQMethod`` subclass) fits the method on
the small task of :mod:`udora.methods.contract_task` (200 points) and returns the rules it
breaks as ``"rule: why"`` strings, ``[]`` when none; ``python -m udora.methods.contract
NAME ...`` prints them (exit 1 on a failure) with only udora installed, no checkout.
tests/methods/test_contract.py runs these rules over every registered method.

The rules: its declarations are usable (:func:`udora.methods.plugins.declaration_problems`);
the config round-trips through YAML; an unknown field lists the valid ones; the search
space's values (or both ends) build the config, ``sweeps`` accepts it and its suggestions
build the config; ``n_members=1`` is
refused unless the method fixes one member; ``predict`` before ``fit`` raises
:class:`~udora.methods.base.NotFittedError`; predictions have the right shapes, finite
values and variances ``>= 0``; the same seed gives the same prediction; the AU varies over
the points unless the class declares ``aleatoric = "constant"`` (then it does not);
R^2 > 0.5 against the noise-free function; median EU far from the data exceeds median EU
near it (for tree methods, which predict a constant beyond the data, the far prediction is
the corner's). A method that declares the classification kind meets the classification
rules too (:mod:`udora.methods.contract_classification`, a task with a class missing from
the training sample); the regression task rules apply to methods that declare regression.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import yaml

from udora.methods.base import (
    ConfigError,
    NotFittedError,
    Prediction,
    UQMethod,
    aleatoric_on,
)
from udora.methods.contract_task import Task, make_task
from udora.methods.plugins import declaration_problems
from udora.methods.registry import get_method_class
from udora.oracle.kinds import REGRESSION

__all__ = ["CONFIG_RULES", "RULES", "TASK_RULES", "Subject", "check_method", "main", "subject"]

QUICK_EPOCHS = 60  # methods trained for n_epochs run this many here
SEED = 3

# Per-method settings of the built-ins for this small task, each with its reason.
SETTINGS: dict[str, dict[str, Any]] = {
    # Diagonal SWAG explores one basin; with tanh every hidden unit saturates at the far
    # points ([3, 5]^2 is ~7 sd out), so the sampled functions agree there more than near
    # the data (median EU far/near ~0.5 with tanh, ~50 with relu on this task).
    "swag": {"activation": "relu"},
    # Speed: 150 full-batch marginal-likelihood steps instead of 500.
    "dkl": {"n_steps": 150},
    # Speed: 5 members of 200 trees instead of 10 of 500.
    "ngboost_bag": {"n_members": 5, "n_estimators": 200},
}

# Trees predict a constant beyond the data: every far point ([3, 5]^2) falls in the leaves
# of the data's outer corner, so "EU far > EU near" compares the corner with the interior
# median and passes or fails with the task's seed. For these methods the rule is instead
# that the far prediction IS the corner's prediction.
CONSTANT_EXTRAPOLATION = frozenset({"ngboost_nig", "ngboost_bag", "catboost_ps"})


@dataclasses.dataclass
class Subject:
    """One method under check: its class, the overrides it is built with, the task."""

    cls: type[UQMethod]
    overrides: dict[str, Any]
    task: Task
    _fitted: UQMethod | None = dataclasses.field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.cls.name

    def build(self, **extra: Any) -> UQMethod:
        """An unfitted instance with the subject's overrides and ``extra``."""
        return self.cls(**{**self.overrides, **extra})

    def fit(self, seed: int = SEED) -> UQMethod:
        """A fresh fit on the task; ``knowledge`` carries the prior only if the class uses it."""
        knowledge = self.task.prior.knowledge(self.task.X)
        if not self.cls.uses_task_prior:
            knowledge = dataclasses.replace(knowledge, prior=None)
        return self.build().fit(self.task.X, self.task.y, seed=seed, knowledge=knowledge)

    @property
    def fitted(self) -> UQMethod:
        """The one fit the task rules share, made on first use."""
        if self._fitted is None:
            self._fitted = self.fit()
        return self._fitted


def subject(
    method: str | type, *, overrides: dict[str, Any] | None = None, task: Task | None = None
) -> Subject:
    """The :class:`Subject` for ``method`` (name or class): ``n_epochs`` = 60 where it has
    one, then :data:`SETTINGS`, then ``overrides``; the task defaults to ``make_task()``."""
    cls = get_method_class(method) if isinstance(method, str) else method
    fields = getattr(getattr(cls, "Config", None), "model_fields", {})
    quick = {"n_epochs": QUICK_EPOCHS} if "n_epochs" in fields else {}
    settings = SETTINGS.get(getattr(cls, "name", ""), {})
    return Subject(cls, {**quick, **settings, **(overrides or {})}, task or make_task())


def check_declarations(s: Subject) -> None:
    problems = declaration_problems(s.cls)
    assert not problems, "; ".join(problems)


def check_config_roundtrips_through_yaml(s: Subject) -> None:
    config = s.cls().config
    loaded = yaml.safe_load(yaml.safe_dump(config.to_dict()))
    assert s.cls.Config(**loaded) == config, "Config(**yaml(config)) differs from config"
    assert s.cls(**loaded).config == config, "the method built from yaml(config) differs"


def check_unknown_field_lists_valid_ones(s: Subject) -> None:
    try:
        s.cls(no_such_field=1)
    except ConfigError as err:
        missing = [f for f in s.cls.Config.model_fields if f not in str(err)]
        assert "valid fields" in str(err) and not missing, f"the error omits {missing}: {err}"
        return
    raise AssertionError("an unknown field no_such_field=1 was accepted")


def _sweeps():
    with warnings.catch_warnings():  # pydantic's V2 notice on importing sweeps 0.2
        warnings.simplefilter("ignore")
        import sweeps
    return sweeps


def check_search_space_accepted_by_sweeps(s: Subject) -> None:
    config = s.cls().config
    space = config.search_space()
    unknown = set(space) - set(type(config).model_fields)
    assert not unknown, f"search space keys are not fields: {sorted(unknown)}"
    for key, spec in space.items():  # every value, or both ends, inside the field's constraint
        for value in spec.get("values", [spec.get("min"), spec.get("max")]):
            s.cls(**{key: value})
    for algorithm in ("random", "bayes") if space else ():  # gp_oracle: nothing to tune
        sweep = {"method": algorithm, "metric": {"name": "val_nll", "goal": "minimize"}}
        run = _sweeps().next_run({**sweep, "parameters": space}, [], validate=True)
        suggestion = {k: v["value"] for k, v in run.config.items()}
        assert set(suggestion) == set(space), f"{algorithm} suggested {sorted(suggestion)}"
        built = s.cls(**suggestion).config
        wrong = {k: v for k, v in suggestion.items() if getattr(built, k) != v}
        assert not wrong, f"the config built from {algorithm}'s suggestion changed {wrong}"


ONE_MEMBER = "n_members=1 is accepted: one member's spread is 0, so EU would be 0 everywhere"
NOT_FITTED = "start predict with self._check_fitted() and set self.fitted_ = True in fit"


def check_member_count_refuses_one(s: Subject) -> None:
    if "n_members" not in s.cls.Config.model_fields:
        return
    for k in (2, 1):
        try:
            s.cls(n_members=k)
        except ConfigError:
            return  # K = 2 refused: a one-network method that fixes n_members = 1
    raise AssertionError(f"{ONE_MEMBER}; constrain it with Field(ge=2)")


def check_predict_before_fit_raises(s: Subject) -> None:
    try:
        s.build().predict(s.task.X_near[:2])
    except NotFittedError:
        return
    except Exception as err:
        got = f"raised {type(err).__name__}: {err}, not NotFittedError"
        raise AssertionError(f"predict before fit {got}; {NOT_FITTED}") from err
    raise AssertionError(f"predict before fit returned a prediction; {NOT_FITTED}")


def _check_prediction(pred: Prediction, m: int) -> None:
    """A :class:`Prediction` of ``m`` points: ``(m,)`` float64 arrays, finite, variances >= 0."""
    assert isinstance(pred, Prediction), f"predict returned {type(pred).__name__}"
    for arr in (pred.mean, pred.aleatoric, pred.epistemic, pred.total):
        assert arr.shape == (m,) and arr.dtype == np.float64, f"{arr.shape} {arr.dtype}"
        assert np.all(np.isfinite(arr)), "values are not finite"
    assert np.all(pred.aleatoric >= 0) and np.all(pred.epistemic >= 0), "negative variance"
    np.testing.assert_allclose(pred.total, pred.aleatoric + pred.epistemic)
    if pred.member_means is not None:
        assert pred.member_means.ndim == 2 and pred.member_means.shape[1] == m
        np.testing.assert_allclose(pred.member_means.mean(axis=0), pred.mean, rtol=1e-10)


def check_shapes(s: Subject) -> None:
    method = s.fitted
    _check_prediction(method.predict(s.task.X_near), s.task.X_near.shape[0])
    _check_prediction(method.predict(s.task.X_near[:1]), 1)


def check_same_seed_same_prediction(s: Subject) -> None:
    again = s.fit().predict(s.task.X_near)
    first = s.fitted.predict(s.task.X_near)
    np.testing.assert_array_equal(again.mean, first.mean)
    np.testing.assert_array_equal(again.aleatoric, first.aleatoric)
    np.testing.assert_array_equal(again.epistemic, first.epistemic)


def check_aleatoric_as_declared(s: Subject) -> None:
    aleatoric = s.fitted.predict(s.task.X_near).aleatoric
    spread = float(np.max(aleatoric) - np.min(aleatoric))
    constant = spread <= 1e-12 * max(float(np.max(np.abs(aleatoric))), 1e-300)
    declared = aleatoric_on(s.cls.aleatoric, REGRESSION)
    if declared == "constant":
        assert constant, f'declares aleatoric = "constant", but its AU ranges over {spread:.3g}'
    else:
        assert not constant, (
            f"its AU is {aleatoric[0]:.4g} at every point; declare aleatoric = "
            '"constant" (docs/adding_a_method.md), so the report says why its AU '
            "correlations are empty"
        )


def check_r2(s: Subject) -> None:
    mean, f = s.fitted.predict(s.task.X_near).mean, s.task.f_near
    r2 = 1.0 - np.mean((mean - f) ** 2) / np.var(f)
    assert r2 > 0.5, f"R^2 = {r2:.3f} against the noise-free function"


def check_epistemic_grows_far_from_data(s: Subject) -> None:
    method = s.fitted
    if s.name in CONSTANT_EXTRAPOLATION:
        corner = method.predict(s.task.X.max(axis=0, keepdims=True))
        far_pred = method.predict(s.task.X_far)
        np.testing.assert_allclose(far_pred.mean, corner.mean[0], rtol=1e-12)
        np.testing.assert_allclose(far_pred.epistemic, corner.epistemic[0], rtol=1e-12)
        return
    near = np.median(method.predict(s.task.X_near).epistemic)
    far = np.median(method.predict(s.task.X_far).epistemic)
    assert far > near, f"median EU far {far:.4g} <= near {near:.4g}"


Rule = Callable[[Subject], None]
CONFIG_RULES: list[Rule] = [
    check_declarations,
    check_config_roundtrips_through_yaml,
    check_unknown_field_lists_valid_ones,
    check_search_space_accepted_by_sweeps,
    check_member_count_refuses_one,
    check_predict_before_fit_raises,
]
TASK_RULES: list[Rule] = [
    check_shapes,
    check_same_seed_same_prediction,
    check_aleatoric_as_declared,
    check_r2,
    check_epistemic_grows_far_from_data,
]
RULES = CONFIG_RULES + TASK_RULES


from udora.methods.contract_classification import CLASSIFICATION_RULES  # noqa: E402


def rule_count(method: str | type) -> int:
    """How many rules :func:`check_method` applies to ``method``: the config rules, and
    the task rules of each kind it declares."""
    cls = get_method_class(method) if isinstance(method, str) else method
    kinds = getattr(cls, "kinds", ("regression",))
    return (
        len(CONFIG_RULES)
        + (len(TASK_RULES) if "regression" in kinds else 0)
        + (len(CLASSIFICATION_RULES) if "classification" in kinds else 0)
    )


def rule_name(rule: Rule) -> str:
    """``shapes`` for ``check_shapes``."""
    return rule.__name__.removeprefix("check_")


def _why(rule: Rule, s: Subject) -> str:
    """Why ``s`` breaks ``rule``; "" when it meets it."""
    try:
        rule(s)
    except AssertionError as err:
        return str(err).strip() or "failed"
    except Exception as err:  # a crash breaks the rule too
        return f"{type(err).__name__}: {err}"
    return ""


def check_method(
    method: str | type, *, overrides: dict[str, Any] | None = None, task: Task | None = None
) -> list[str]:
    """The contract rules ``method`` (a name or a class) breaks, as ``"rule: why"``; [].

    A name that is not usable (unknown, or a plugin that is left out) gives one ``loads``
    failure; unusable declarations stop the check there, as every later rule builds the
    default config.
    """
    try:
        s = subject(method, overrides=overrides, task=task)
    except KeyError as err:
        return [f"loads: {err.args[0] if err.args else err}"]
    failures = []
    kinds = getattr(s.cls, "kinds", ("regression",))
    rules = CONFIG_RULES + (TASK_RULES if "regression" in kinds else [])
    for rule in rules:
        if why := _why(rule, s):
            failures.append(f"{rule_name(rule)}: {why}")
            if rule is check_declarations:
                return failures
    if "classification" in kinds:
        cs = classification_subject(s)
        failures += [f"{rule_name(r)}: {why}" for r in CLASSIFICATION_RULES if (why := _why(r, cs))]
    return failures


def classification_subject(s: Subject, task: Any = None) -> Any:
    """The subject of the classification rules (:mod:`.contract_classification`): the same
    class and overrides on the classification task (``task``, default its own)."""
    from udora.methods.contract_classification import (
        ClassificationSubject,
        make_classification_task,
    )

    return ClassificationSubject(
        s.cls,
        s.overrides,
        task or make_classification_task(),
        constant_extrapolation=s.name in CONSTANT_EXTRAPOLATION,
    )


def report(method: str, echo: Callable[[str], Any] = print) -> int:
    """Check ``method``; echo ``NAME: meets ...`` or one line per broken rule; 0 or 1."""
    failures = check_method(method)
    for failure in failures:
        echo(f"{method}: {failure}")
    if not failures:
        echo(f"{method}: meets the method contract ({rule_count(method)} rules)")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m udora.methods.contract NAME [NAME ...]``: exit 0 when every one passes."""
    names = sys.argv[1:] if argv is None else argv
    if not names:
        print("usage: python -m udora.methods.contract NAME [NAME ...]", file=sys.stderr)
        return 2
    return max([report(name) for name in names])


if __name__ == "__main__":
    sys.exit(main())
