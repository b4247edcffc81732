"""Typed configuration: frozen dataclasses whose annotations are their settings' types and whose
field defaults are the one place of each default.

A block (a ``Typed`` subclass: the run's top level, its ``split``, a strategy's settings) checks
every field against its annotation when it is constructed, however it is constructed (composed
from the command line, built by a paper target, written in a test): a wrong type is one
``ConfigError`` line naming the setting, ``sched.chunks must be an integer, got 'abc'``. Ranges
and choices are the subclass's own ``__post_init__``. The checks know ``int``, ``float`` (an
integer is taken), ``bool``, ``str`` (a number is taken as its text, as Hydra's parser may give
one, where the setting is text alone), ``None``, ``tuple[X, ...]`` (a list is taken), ``Any`` and unions of them; any other
annotation (a mapping, a class) is left to the subclass.

``from_config`` builds a block, and the blocks nested in it, from a composed mapping, refusing a
key its class has not; a block whose mapping names its class by ``_target_`` (a strategy's
settings: ``conf/sched/<name>.yaml`` names the class its block composes into) is built as that
class. ``defaults`` is what Hydra's config store holds for a block (so its yaml restates none),
``to_container`` gives back the mapping (a run folder's ``config.yaml``), and ``differences``
compares two blocks setting by setting (what a resumed run may not change).

``Part`` is a component built from its ``_target_`` (a data source, a model, an optimizer, a
launcher, an executor): its own settings are typed by the class it builds, whose annotations
``check`` reads (importing it) before it is built. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

from dygsched.errors import ConfigError

T = TypeVar("T", bound="Typed")
KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null"}
CHECKED = (int, float, bool, str, type(None))
MISSING_VALUE = "???"  # Hydra's mark of a setting its config file leaves for the command line


def _is_union(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType)


def checkable(hint: Any) -> bool:
    """Whether ``conforms`` knows ``hint`` (else the value is the owner's to check)."""
    if hint is Any:
        return True
    if _is_union(hint):
        return all(checkable(arg) for arg in get_args(hint))
    if get_origin(hint) is tuple:
        args = get_args(hint)
        return len(args) == 2 and args[1] is Ellipsis and checkable(args[0])
    return hint in CHECKED


def _text(hint: Any) -> bool:
    """``str`` or ``str | None``: a setting that is text, which takes a number as its text."""
    return hint is str or (_is_union(hint) and set(get_args(hint)) == {str, type(None)})


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as a config gives it: a list for a tuple, an integer for a float; a number
    for text, as Hydra's parser reads ``run_id=2024``) fits ``hint``."""
    if _text(hint) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    return _fits(value, hint)


def _fits(value: Any, hint: Any) -> bool:
    """``conforms`` without taking a number as text (inside a union with other kinds, a number is one)."""
    if hint is Any or not checkable(hint):
        return True
    if _is_union(hint):
        return any(_fits(value, arg) for arg in get_args(hint))
    if get_origin(hint) is tuple:
        item = get_args(hint)[0]
        return isinstance(value, (list, tuple)) and all(_fits(v, item) for v in value)
    if hint is bool:
        return isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def normalised(value: Any, hint: Any) -> Any:
    """``value`` as the field holds it: a float for ``float``, a tuple for ``tuple[...]``, text for ``str``."""
    if hint is Any or not checkable(hint):
        return value
    if _text(hint) and value is not None:
        return str(value)
    if _is_union(hint):
        args = get_args(hint)
        return normalised(value, next(arg for arg in args if _fits(value, arg)))
    if get_origin(hint) is tuple:
        return tuple(normalised(v, get_args(hint)[0]) for v in value)
    if hint is float:
        return float(value)
    return value


def describe(hint: Any) -> str:
    """``an integer or null``, ``a list of integers``: what ``hint`` asks for, in words."""
    if _is_union(hint):
        return " or ".join(describe(arg) for arg in get_args(hint))
    if get_origin(hint) is tuple:
        return "a list of " + describe(get_args(hint)[0]).removeprefix("an ").removeprefix("a ") + "s"
    return KIND_NAMES.get(hint, getattr(hint, "__name__", str(hint)))


_HINTS: dict[type, dict[str, Any]] = {}


def hints_of(cls: type) -> dict[str, Any]:
    """The resolved annotations of a dataclass's fields (computed once per class)."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def load_class(target: str, what: str) -> type:
    """The class ``package.module.Class`` (or ``package.module:Class``) names, imported now."""
    from importlib import import_module

    module, _, name = target.partition(":") if ":" in target else target.rpartition(".")
    try:
        found = getattr(import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"cannot build {what} '{target}': {str(exc).strip().splitlines()[-1]}") from None
    if not isinstance(found, type):
        raise ConfigError(f"cannot build {what} '{target}': not a class")
    return found


def target_of(cls: type) -> str:
    """How a config's ``_target_`` names ``cls``."""
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass(frozen=True)
class Typed:
    """Base of every typed configuration block (see the module docstring).

    ``key``: where its settings are set (``sched``, ``split``; empty at the top level), which every
    message names. ``selected``: its mapping names its class by ``_target_`` (a base such as the
    strategies' config is built as the subclass named)."""

    key: ClassVar[str] = ""
    selected: ClassVar[bool] = False

    def __post_init__(self) -> None:
        hints = hints_of(type(self))
        for item in fields(self):
            value, hint = getattr(self, item.name), hints[item.name]
            if not conforms(value, hint):
                raise ConfigError(f"{self.path(item.name)} must be {describe(hint)}, got {value!r}")
            object.__setattr__(self, item.name, normalised(value, hint))

    @classmethod
    def path(cls, name: str) -> str:
        """A setting's full name: ``sched.chunks``, ``split.train``, ``epochs``."""
        return f"{cls.key}.{name}" if cls.key else name

    @classmethod
    def from_config(cls: type[T], options: Mapping[str, Any]) -> T:
        """The block from a composed mapping (nested blocks from their mappings); a key the class has
        not is one line naming the keys it has; a ``_target_`` names the subclass to build."""
        options = dict(options)
        chosen: type[T] = cls
        target = options.pop("_target_", None)
        if target is not None:
            chosen = cls.chosen_by(str(target), options.get("name"))
        elif cls.selected and cls is Typed:
            raise ConfigError(f"{cls.key} names no _target_")
        known = [item.name for item in fields(chosen) if item.init]
        unknown = [key for key in options if key not in known]
        if unknown:
            raise ConfigError(f"unknown key '{chosen.path(unknown[0])}': {chosen.__name__} has {', '.join(known)}")
        missing = [item.name for item in fields(chosen) if item.init and _required(item) and item.name not in options]
        if missing:
            raise ConfigError(f"{chosen.__name__} needs {', '.join(chosen.path(name) for name in missing)}")
        hints = hints_of(chosen)
        values = {name: built(value, hints[name], chosen.path(name)) for name, value in options.items()}
        return chosen(**values)

    @classmethod
    def chosen_by(cls: type[T], target: str, name: Any = None) -> type[T]:
        """The subclass of ``cls`` that ``_target_`` names (one line if it names something else)."""
        if target == target_of(cls):
            return cls
        named = f" '{name}'" if name is not None else ""
        found = load_class(target, f"{cls.key}{named}")
        if not issubclass(found, cls):
            raise ConfigError(f"{cls.key}{named}: _target_ '{target}' is not a {cls.__name__} (a {cls.key} block's class)")
        return found

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every setting's default as a config holds it (a list for a tuple, a mapping for a block),
        with the class as ``_target_`` where the block is selected by it: Hydra's config store node."""
        values: dict[str, Any] = {"_target_": target_of(cls)} if cls.selected else {}
        for item in fields(cls):
            if not item.init:
                continue
            if item.default is not MISSING:
                default = item.default
            elif item.default_factory is not MISSING:
                default = item.default_factory()
            else:
                default = None  # a block Hydra's defaults list fills in (the config groups)
            values[item.name] = as_container(default)
        return values

    def to_container(self) -> dict[str, Any]:
        """The block as plain containers, in its fields' order (``_target_`` first where selected)."""
        values: dict[str, Any] = {"_target_": target_of(type(self))} if self.selected else {}
        for item in fields(self):
            if item.init:
                values[item.name] = as_container(getattr(self, item.name))
        return values


def _required(item: dataclasses.Field[Any]) -> bool:
    return item.default is MISSING and item.default_factory is MISSING


def built(value: Any, hint: Any, where: str) -> Any:
    """A composed value as the field of ``hint`` holds it: a nested block built from its mapping."""
    cls = block_class(hint)
    if cls is None or not isinstance(value, Mapping):
        return value
    if issubclass(cls, Part):
        return cls.of(value, where)
    if issubclass(cls, Typed):
        return cls.from_config(value)
    return value


def block_class(hint: Any) -> type | None:
    """The block (``Typed`` or ``Part``) class a field holds, also as ``Block | None``."""
    candidates = [arg for arg in get_args(hint) if arg is not type(None)] if _is_union(hint) else [hint]
    if len(candidates) == 1 and isinstance(candidates[0], type) and issubclass(candidates[0], (Typed, Part)):
        return candidates[0]
    return None


def as_container(value: Any) -> Any:
    """Plain containers: a block as its mapping, a tuple as a list, a mapping's values in turn."""
    if isinstance(value, (Typed, Part)):
        return value.to_container()
    if isinstance(value, (list, tuple)):
        return [as_container(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): as_container(item) for key, item in value.items()}
    return value


def differences(before: Any, after: Any, where: str = "", skip: tuple[str, ...] = ()) -> list[str]:
    """``setting (before -> after)`` for every setting that differs between two typed values (blocks
    compared field by field, a block of another class as one value), except those under ``skip``."""
    if isinstance(before, (Typed, Part)) and type(before) is type(after):
        before, after = before.to_container(), after.to_container()
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        changed = []
        for key in sorted(set(before) | set(after), key=lambda k: (k not in before, list(before).index(k) if k in before else 0)):
            name = f"{where}.{key}" if where else str(key)
            if name in skip:
                continue
            changed += differences(before.get(key), after.get(key), name, skip)
        return changed
    if as_container(before) == as_container(after):
        return []
    return [f"{where} ({as_container(before)!r} -> {as_container(after)!r})"]


@dataclass(frozen=True)
class Part(Mapping[str, Any]):
    """A component built from its ``_target_`` with its settings (``model``, ``launcher``, a strategy's
    executor): ``key`` is where it is set, ``name`` the config file it came from. Its settings are typed
    by the class it builds: ``check`` reads that class's annotations (its dataclass fields or its
    constructor's parameters) and refuses a value of another type in one line, before it is built.
    It reads as its composed mapping (``_target_``, ``name`` and the settings; a subclass's own
    setting left at ``None`` is not written), which Hydra's ``instantiate`` and the components take.
    Subclasses type the settings the run itself reads (``DatasetConfig.snapshot``,
    ``OptimizerConfig.lr``) as fields of their own."""

    key: str
    target: str
    name: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.target:
            raise ConfigError(f"{self.key} '{self.name}' names no _target_")
        object.__setattr__(self, "settings", dict(self.settings))
        unset = [name for name, value in self.items() if value == MISSING_VALUE]
        if unset:  # a '???' in its config file the command line did not fill in
            raise ConfigError(f"{self.key} '{self.name}' needs {self.key}.{unset[0]}=... (it has no default)")
        hints = hints_of(type(self))
        for item in fields(self)[4:]:  # a subclass's own typed settings
            value, hint = getattr(self, item.name), hints[item.name]
            if not conforms(value, hint):
                raise ConfigError(f"{self.key}.{item.name} must be {describe(hint)}, got {value!r}")
            object.__setattr__(self, item.name, normalised(value, hint))

    @classmethod
    def of(cls: type[P], options: Mapping[str, Any], key: str) -> P:
        """The part from its composed mapping: ``_target_``, ``name``, the subclass's fields, then the rest as settings."""
        options = dict(options)
        own = {item.name: options.pop(item.name) for item in fields(cls)[4:] if item.name in options}
        target = options.pop("_target_", None)
        name = options.pop("name", None)
        return cls(key, "" if target is None else str(target), None if name is None else str(name), options, **own)

    def to_container(self) -> dict[str, Any]:
        return dict(self)

    @property
    def params(self) -> dict[str, Any]:
        """What its class is built with: ``_target_`` and every setting (``name`` names a file, not an argument)."""
        return {key: value for key, value in self.items() if key != "name"}

    def _items(self) -> dict[str, Any]:
        own = {
            item.name: as_container(getattr(self, item.name)) for item in fields(self)[4:] if getattr(self, item.name) is not None
        }
        head: dict[str, Any] = {"name": self.name} if self.name is not None else {}
        return {**head, "_target_": self.target, **own, **as_container(dict(self.settings))}

    def __getitem__(self, key: str) -> Any:
        return self._items()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def built_class(self) -> type:
        """The class it builds, imported now (one line if ``_target_`` names none)."""
        return load_class(self.target, f"{self.key} '{self.name}'")

    def check(self, exclude: tuple[str, ...] = ()) -> type:
        """Each setting against the annotation of the parameter it sets in the class it builds (a
        setting the class does not annotate is the class's to refuse); returns that class."""
        built_class = self.built_class()
        annotations = parameter_types(built_class)
        for name, value in self.settings.items():
            hint = annotations.get(name)
            if name in exclude or hint is None:
                continue
            if not conforms(value, hint):
                raise ConfigError(f"{self.key}.{name} must be {describe(hint)}, got {value!r}")
        return built_class

    def build(self, what: str | None = None, exclude: tuple[str, ...] = (), **kwargs: Any) -> Any:
        """The component: its settings checked against its class (``check``), then its class built
        with them and ``kwargs`` (a failure is one line naming it, ``what``: the part's key by default)."""
        from dygsched.components import instantiate_component

        self.check(exclude)
        params = {key: value for key, value in self.params.items() if key not in exclude}
        return instantiate_component(params, what or self.key, **kwargs)

    def with_settings(self: P, **changes: Any) -> P:
        """The same part with some settings changed (or added)."""
        return dataclasses.replace(self, settings={**self.settings, **changes})


P = TypeVar("P", bound=Part)


_PARAMETERS: dict[type, dict[str, Any]] = {}


def parameter_types(cls: type) -> dict[str, Any]:
    """``_parameter_types`` computed once per class."""
    if cls not in _PARAMETERS:
        _PARAMETERS[cls] = _parameter_types(cls)
    return _PARAMETERS[cls]


def _parameter_types(cls: type) -> dict[str, Any]:
    """What a class is built with and each argument's annotation: a dataclass's fields, else its
    constructor's parameters; an annotation that cannot be resolved is left out (not checked)."""
    if dataclasses.is_dataclass(cls):
        try:
            return {name: hint for name, hint in get_type_hints(cls).items() if name in {f.name for f in fields(cls)}}
        except Exception:  # a forward reference to a type not importable here
            return {}
    init = next(vars(klass)["__init__"] for klass in cls.__mro__ if "__init__" in vars(klass))
    try:
        hints = get_type_hints(init)
    except Exception:
        return {}
    names = [p.name for p in inspect.signature(cls).parameters.values() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    return {name: hints[name] for name in names if name in hints}
