"""One part of a record the sources fill (a :class:`~nicwatch.model.Reading`, or the host-wide
:class:`~nicwatch.model.HostReading`), declared once: ``stats = Part[StatSet | None](None)``
in the record's class body gives the part its name (the attribute), its type (the type
argument) and its default (the value of a part no source put).

On the class, the part is the typed key the sources put a value with
(``poll.put(device, Reading.stats, stat_set)``: the type checker refuses a value of another
type, and a misspelt part is an attribute that does not exist). On a record, it is the value:
:func:`record` makes the class a frozen dataclass with slots whose fields are its annotated
ones and its parts, so ``reading.stats`` reads a slot (at the cost of any other field), and
``dataclasses.replace``, ``==`` and ``repr`` see every part.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Generic, TypeVar, dataclass_transform, get_args, overload

__all__ = ["Part", "parts_of", "record"]

T = TypeVar("T")
R = TypeVar("R")


class Part(Generic[T]):
    """A part of a record: declared as ``name = Part[type](default)`` in the record's class
    body (the type argument is the part's type; the runtime type check of tests reads it)."""

    __slots__ = ("__orig_class__", "default", "name", "owner")

    def __init__(self, default: T) -> None:
        self.default = default
        self.name = ""
        self.owner = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.owner = owner.__name__

    @property
    def hint(self) -> Any:
        """The part's type: the argument of ``Part[...]`` it was declared with (typing sets
        ``__orig_class__`` on an instance of a subscripted generic)."""
        orig = getattr(self, "__orig_class__", None)
        if orig is None:
            raise TypeError(f"part {self.name!r} is declared without its type: "
                            "write Part[type](default)")
        return get_args(orig)[0]

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Part[T]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object, owner: type | None = None) -> Part[T] | T:
        # Only until record() made the class: then an instance reads its slot, and the class
        # its part through its metaclass.
        return self if instance is None else self.default

    def __repr__(self) -> str:
        return f"{self.owner}.{self.name}"


def parts_of(cls: type) -> tuple[Part[Any], ...]:
    """The parts a record class declares, in declaration order."""
    parts: tuple[Part[Any], ...] | None = getattr(type(cls), "__parts__", None)
    if parts is None:  # not made by record() yet
        parts = tuple(v for v in vars(cls).values() if isinstance(v, Part))
    return parts


@dataclass_transform(frozen_default=True)
def record(cls: type[R]) -> type[R]:
    """``cls`` as a frozen dataclass with slots, exactly as ``@dataclass(frozen=True,
    slots=True)`` would make it with a field per part (its annotated fields and its parts with
    their defaults, in the order of the class body): an instance reads a part from its slot,
    at the cost of any field. ``cls.<part>`` is the part itself (the typed key), through a
    metaclass of its own."""
    parts = parts_of(cls)
    own = inspect.get_annotations(cls)
    # the fields in the order of the class body (an annotated field with a default may come
    # after the parts), so that positional construction follows the declaration
    annotations = {name: hint for name, hint in own.items() if name not in vars(cls)}
    namespace = {name: value for name, value in vars(cls).items()
                 if name not in ("__dict__", "__weakref__")}
    for name, value in vars(cls).items():
        if isinstance(value, Part):
            annotations[name] = value.hint
            namespace[name] = dataclasses.field(default=value.default)
        elif name in own:
            annotations[name] = own[name]
    namespace["__annotations__"] = annotations
    # the keys go on the metaclass once the dataclass is made (it reads each field's default
    # from the class, which a key would hide)
    meta = type(f"{cls.__name__}Record", (type(cls),), {"__parts__": parts})
    made = dataclasses.dataclass(frozen=True, slots=True)(
        meta(cls.__name__, cls.__bases__, namespace))
    made.__qualname__ = cls.__qualname__
    made.__module__ = cls.__module__
    for part in parts:
        # a data descriptor of the metaclass wins over the class's own attribute (the slot,
        # which instances read): ``cls.<part>`` is the part. A property of a C getter (the
        # dict's), as a put() names its key every time: 28 ns, where a Python __get__ took 58.
        setattr(meta, part.name, property({made: part}.__getitem__))
    return made
