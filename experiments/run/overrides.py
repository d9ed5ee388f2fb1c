"""What ``--set key=value`` means for a run, parsed once into :class:`Overrides`
(docs/running.md, "One run").

The user writes one flat list of keys; the parts are told apart here and nowhere else:

- ``width=64``: a field of the method's config (:attr:`Overrides.method`);
- ``preset.n_train=300``, ``preset.truth=warped``: a preset field, the task
  (:attr:`Overrides.task`, keys without the prefix);
- ``method_seed=3``: the seed of the method's own randomness (:attr:`Overrides.method_seed`);
- ``nn_ensemble.width=64`` (a registered method's name before the dot): a field of that
  method only, in a grid (:attr:`Overrides.scoped`; :meth:`Overrides.for_method`).

:meth:`Overrides.flat` writes the parts back as the user's keys: what ``result.json``
records as ``overrides`` and what config labels are made of.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import yaml

from udora import methods
from udora.errors import UserError
from udora.experiments.run.checks import UsageError

PRESET_PREFIX = "preset."
METHOD_SEED = "method_seed"  # a run field set through --set, not a method or preset field


def _check_seed(value: Any) -> int | None:
    """``method_seed`` as an int; None stays None. Raises UsageError unless it is a
    non-negative integer."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"--set {METHOD_SEED}={value!r}: expected a non-negative integer")
    return int(value)


@dataclass(frozen=True)
class Overrides:
    """A run's ``--set`` values, one typed part each.

    Attributes:
        method: method config fields (``{"width": 64}``), validated by the method's config.
        task: preset fields without the ``preset.`` prefix (``{"n_train": 300}``; dotted
            keys such as ``noise.std_min`` and ``truth.features`` as
            :meth:`udora.oracle.preset.Preset.with_overrides` reads them).
        method_seed: the seed the method's own randomness (initialisation, bootstrap draws,
            minibatches) derives from, apart from the task seed that draws the data; None
            when not given (the method then uses the task seed, as every run did before it
            existed).
        scoped: method name -> fields for that method only (a grid's
            ``nn_ensemble.width=64``); empty for one resolved run.

    The parts are read-only copies of what was given (a part cannot be changed in place);
    the value pickles (spawned grid workers get it inside a resolved run).
    """

    method: Mapping[str, Any] = field(default_factory=dict)
    task: Mapping[str, Any] = field(default_factory=dict)
    method_seed: int | None = None
    scoped: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        scoped = {m: MappingProxyType(dict(f)) for m, f in self.scoped.items() if f}
        object.__setattr__(self, "method", MappingProxyType(dict(self.method)))
        object.__setattr__(self, "task", MappingProxyType(dict(self.task)))
        object.__setattr__(self, "method_seed", _check_seed(self.method_seed))
        object.__setattr__(self, "scoped", MappingProxyType(scoped))

    def __reduce__(self):  # read-only mappings do not pickle; their dicts do
        scoped = {m: dict(f) for m, f in self.scoped.items()}
        return Overrides, (dict(self.method), dict(self.task), self.method_seed, scoped)

    @classmethod
    def parse(cls, pairs: Iterable[str]) -> Overrides:
        """``["width=64", "preset.n_train=300"]`` (the CLI's ``--set``): values parsed as
        YAML scalars or lists. Raises ValueError for an item without ``=``."""
        return cls.from_flat(parse_set(list(pairs)))

    @classmethod
    def from_flat(cls, flat: Mapping[str, Any] | None) -> Overrides:
        """The parts of flat user keys (parsed ``--set``, a study's ``set:`` block, a tuned
        file's config, a ``result.json``'s ``overrides``); see the module doc."""
        known = set(methods.list_methods())
        method, task, scoped = {}, {}, {}
        seed = None
        for key, value in (flat or {}).items():
            head, dot, rest = key.partition(".")
            if key.startswith(PRESET_PREFIX):
                task[key[len(PRESET_PREFIX) :]] = value
            elif key == METHOD_SEED:
                seed = _check_seed(value)
            elif dot and head in known:
                scoped.setdefault(head, {})[rest] = value
            else:  # an unknown field is the method config's error, naming the valid ones
                method[key] = value
        return cls(method, task, seed, scoped)

    @classmethod
    def of(cls, value: Overrides | Mapping[str, Any] | None) -> Overrides:
        """``value`` as is, or flat user keys read by :meth:`from_flat`."""
        return value if isinstance(value, Overrides) else cls.from_flat(value)

    def flat(self) -> dict[str, Any]:
        """The user's keys: method fields, ``preset.X``, ``method_seed``,
        ``<method>.<field>``; what :meth:`from_flat` reads back to an equal value."""
        out = dict(self.method)
        out.update({f"{PRESET_PREFIX}{k}": v for k, v in self.task.items()})
        if self.method_seed is not None:
            out[METHOD_SEED] = self.method_seed
        for name, fields in self.scoped.items():
            out.update({f"{name}.{k}": v for k, v in fields.items()})
        return out

    def __bool__(self) -> bool:
        return bool(self.method or self.task or self.scoped) or self.method_seed is not None

    def updated(self, other: Overrides) -> Overrides:
        """These overrides with ``other``'s on top: field by field, ``other`` wins."""
        scoped = {m: dict(f) for m, f in self.scoped.items()}
        for name, fields in other.scoped.items():
            scoped[name] = {**scoped.get(name, {}), **fields}
        seed = self.method_seed if other.method_seed is None else other.method_seed
        return Overrides({**self.method, **other.method}, {**self.task, **other.task}, seed, scoped)

    def without_seed(self) -> Overrides:
        """The same overrides without ``method_seed`` (the config a seed variant is of)."""
        return Overrides(self.method, self.task, None, self.scoped)

    def for_method(self, method: str, method_names: Iterable[str]) -> Overrides:
        """The overrides of ``method`` in a grid of ``method_names``: unscoped fields apply
        to every method, ``scoped[method]`` to ``method`` only (and wins).

        Raises UsageError naming a scoped method that is not in the grid.
        """
        names = list(method_names)
        for name, fields in self.scoped.items():
            if name not in names:
                key = f"{name}.{next(iter(fields))}"
                raise UsageError(
                    f"--set {key}: {name} is not among the grid's methods ({', '.join(names)})"
                )
        mine = self.scoped.get(method, {})
        return Overrides({**self.method, **mine}, self.task, self.method_seed)


def parse_set(pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``["width=64", "preset.n_train=300"]`` -> flat dict; values parsed as YAML
    scalars/lists (:meth:`Overrides.parse` gives the typed parts)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set: expected key=value, got {pair!r}")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as err:
            where = getattr(err, "problem", None) or type(err).__name__
            raise UserError(
                f"--set {pair}: the value is not a YAML scalar or list ({where}); quote it "
                "(--set 'key=\"text\"') or write a list as [a, b]"
            ) from None
    return out
