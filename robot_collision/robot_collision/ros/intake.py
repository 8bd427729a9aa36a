"""Message intake: size caps checked on a message's serialized bytes before it is deserialized.

Why: rclpy hands a subscription callback an already deserialized message, so a ``JointState``
with 10⁶ names has cost a million Python strings (seconds of callback time, hundreds of MB)
before any node code can look at it. The nodes therefore subscribe with ``raw=True`` and
:func:`decode` each message: it reads the CDR sequence counts and string lengths from the bytes
(no per-entry object is built; a count above its cap is refused as soon as it is read) and only
then deserializes with ``rclpy.serialization.deserialize_message``. The bytes themselves are the
middleware's allocation (DDS reassembles the sample before any callback runs); everything this
package allocates for a message is bounded by the caps.

The caps are :class:`MessageLimits` (node parameters ``max_message_bytes``,
``max_message_entries``, ``max_mesh_vertices``): a refused message raises
:class:`MessageRejectedError` (a :class:`~robot_collision.ros.conversions.ConversionError`)
whose text names the field, its size and the parameter that allows it.

Wire format read here: the encapsulation header (2 bytes kind, 2 bytes options), then XCDR1
(``CDR_LE``/``CDR_BE``: primitives aligned to their size) or XCDR2 plain (``PLAIN_CDR2``: to at
most 4); strings and sequences are a uint32 count followed by the bytes / elements (see
:mod:`robot_collision.ros.cdr` for the writer). The layout of each message type is compiled
once from its rosidl type description (``SLOT_TYPES``). A hand-written walker rather than a CDR
library: the only job is to read counts without materialising the message, which general
deserializers (rclpy's included) do not offer.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Optional, Union

from .conversions import ConversionError

__all__ = [
    "DEFAULT_MESSAGE_LIMITS",
    "LIMIT_PARAMETERS",
    "MessageLimits",
    "MessageRejectedError",
    "CheckedSubscription",
    "OnDemandSubscription",
    "check_serialized",
    "checked_callback",
    "decode",
    "message_limits_from_values",
    "validate_limit_parameter",
]

MiB = 1 << 20


@dataclass(frozen=True)
class MessageLimits:
    """Caps on one incoming message (checked before it is deserialized).

    - ``max_message_bytes``: serialized size (64 MiB: a robot description or a world mesh of
      ``max_mesh_vertices`` fits with room; a joint state is a few hundred bytes);
    - ``max_message_entries``: entries of any one sequence of a message (joint names,
      positions, velocities, efforts, command values, dimensions, primitives, poses...), 10,000
      (real robots have at most a few hundred joints); byte arrays (a cloud's point data) are
      bounded by ``max_message_bytes`` alone;
    - ``max_mesh_vertices``: vertices, and triangles, of one mesh of a world-object message
      (``shape_msgs/Mesh``), 200,000 (a detailed scanned object; a mesh this size costs about
      0.2 s to take apart and hull).
    """

    max_message_bytes: int = 64 * MiB
    max_message_entries: int = 10_000
    max_mesh_vertices: int = 200_000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"MessageLimits.{f.name} must be a positive integer, "
                                 f"got {value!r}")


DEFAULT_MESSAGE_LIMITS = MessageLimits()

LIMIT_PARAMETERS: dict[str, tuple[Any, str, str]] = {
    "max_message_bytes": (
        DEFAULT_MESSAGE_LIMITS.max_message_bytes,
        "Largest incoming message in bytes (serialized); larger ones are refused before they "
        "are deserialized.",
        "integer >= 1",
    ),
    "max_message_entries": (
        DEFAULT_MESSAGE_LIMITS.max_message_entries,
        "Most entries of any one sequence of an incoming message (joint names, positions, "
        "command values, primitives, ...; byte arrays such as point data count against "
        "max_message_bytes only); larger messages are refused before they are deserialized.",
        "integer >= 1",
    ),
    "max_mesh_vertices": (
        DEFAULT_MESSAGE_LIMITS.max_mesh_vertices,
        "Most vertices (and triangles) of one mesh in a world-object message; larger meshes are "
        "refused before they are deserialized.",
        "integer >= 1",
    ),
}
"""Node parameters of the caps: ``name: (default, description, constraints)``."""


class MessageRejectedError(ConversionError):
    """A message was refused before deserialization: over a cap, or not valid CDR."""


def validate_limit_parameter(name: str, value: Any) -> int:
    """Validated value of one of :data:`LIMIT_PARAMETERS` (raises ``ConfigurationError``)."""
    from ..errors import ConfigurationError

    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def message_limits_from_values(values: Any) -> MessageLimits:
    """:class:`MessageLimits` from an object with the three limit attributes (node settings)."""
    return MessageLimits(**{f.name: int(getattr(values, f.name)) for f in fields(MessageLimits)})


# --------------------------------------------------------------------------- layouts
# A layout is a flat list of operations on (offset, count) compiled from a message type:
#   ("prim", align, size)                  one primitive (or an alignment-invariant block)
#   ("str", bound)                          a string (bound 0 = unbounded)
#   ("seq", align, size, cap, path, bound)  sequence of fixed-size elements (skipped in O(1))
#   ("sseq", sbound, cap, path, bound)      sequence of strings (walked)
#   ("vseq", sub_ops, cap, path, bound)     sequence of variable-size elements (walked)
#   ("arr", n, sub_ops)                     fixed array of variable-size elements
# ``cap`` is "entries", "mesh" or "bytes" (a sequence of one-byte elements: bounded by
# ``max_message_bytes`` alone); ``path`` names the field in messages.
_Op = tuple[Any, ...]

_PRIMITIVE_SIZES = {
    "boolean": 1, "octet": 1, "char": 1, "uint8": 1, "int8": 1,
    "int16": 2, "uint16": 2, "wchar": 2,
    "int32": 4, "uint32": 4, "float": 4,
    "int64": 8, "uint64": 8, "double": 8, "long double": 8,
}
_MESH_FIELDS = ("vertices", "triangles")


def _message_class(namespaced: Any) -> Any:
    module = importlib.import_module(".".join(namespaced.namespaces))
    return getattr(module, namespaced.name)


def _fixed(ops: list[_Op], max_align: int) -> Optional[tuple[int, int]]:
    """(alignment, size) when ``ops`` are primitives whose layout does not depend on the
    start offset (the first is aligned as strictly as any and the size is a multiple of it),
    so that a sequence of them can be skipped as count * size; None otherwise."""
    if not ops or any(op[0] != "prim" for op in ops):
        return None
    aligns = [min(op[1], max_align) for op in ops]
    top = max(aligns)
    if aligns[0] != top:
        return None
    size = 0
    for a, op in zip(aligns, ops):
        size += (-size) % a
        size += op[2]
    if size % top:
        return None
    return top, size


def _compile_type(t: Any, path: str, max_align: int, depth: int = 0) -> list[_Op]:
    from rosidl_parser import definition as d  # type: ignore[import-untyped,unused-ignore]

    if depth > 32:
        raise TypeError(f"{path}: message types nested too deeply")
    if isinstance(t, d.BasicType):
        size = _PRIMITIVE_SIZES[t.typename]
        return [("prim", min(size, max_align), size)]
    if isinstance(t, (d.UnboundedString, d.BoundedString)):
        return [("str", int(getattr(t, "maximum_size", 0) or 0))]
    if isinstance(t, (d.UnboundedWString, d.BoundedWString)):
        raise TypeError(f"{path}: wide strings are not supported")
    if isinstance(t, d.NamespacedType):
        return _compile_struct(_message_class(t), path, max_align, depth + 1)
    if isinstance(t, d.Array):
        sub = _compile_type(t.value_type, path + "[]", max_align, depth + 1)
        blk = _fixed(sub, max_align)
        if blk is not None:  # n elements back to back: one block
            return [("prim", blk[0], blk[1] * int(t.size))] if t.size else []
        return [("arr", int(t.size), sub)]
    if isinstance(t, (d.UnboundedSequence, d.BoundedSequence)):
        bound = int(getattr(t, "maximum_size", 0) or 0)
        name = path.rsplit(".", 1)[-1]
        sub = _compile_type(t.value_type, path + "[]", max_align, depth + 1)
        if name in _MESH_FIELDS:
            cap = "mesh"
        elif sub == [("prim", 1, 1)]:  # a byte array (cloud points, images): max_message_bytes
            cap = "bytes"
        else:
            cap = "entries"
        blk = _fixed(sub, max_align)
        if blk is not None:
            return [("seq", blk[0], blk[1], cap, path, bound)]
        if len(sub) == 1 and sub[0][0] == "str":  # names: walked without a call per entry
            return [("sseq", sub[0][1], cap, path, bound)]
        return [("vseq", sub, cap, path, bound)]
    raise TypeError(f"{path}: unsupported type {type(t).__name__}")


def _compile_struct(cls: Any, path: str, max_align: int, depth: int = 0) -> list[_Op]:
    ops: list[_Op] = []
    for name, t in zip(cls.get_fields_and_field_types(), cls.SLOT_TYPES):
        for op in _compile_type(t, f"{path}.{name}" if path else name, max_align, depth):
            if op[0] == "prim" and ops and ops[-1][0] == "prim":
                blk = _fixed([ops[-1], op], max_align)  # e.g. a stamp's sec + nanosec
                if blk is not None:
                    ops[-1] = ("prim", blk[0], blk[1])
                    continue
            ops.append(op)
    return ops


_LAYOUTS: dict[tuple[Any, int], list[_Op]] = {}


def _layout(msg_type: Any, max_align: int) -> list[_Op]:
    key = (msg_type, max_align)
    ops = _LAYOUTS.get(key)
    if ops is None:
        ops = _compile_struct(msg_type, "", max_align)
        _LAYOUTS[key] = ops
    return ops


# --------------------------------------------------------------------------- walking
# encapsulation kind (first two bytes) -> (little endian, largest alignment)
_ENCAPSULATIONS = {
    b"\x00\x00": (False, 8), b"\x00\x01": (True, 8),  # CDR_BE, CDR_LE (XCDR1)
    b"\x00\x06": (False, 4), b"\x00\x07": (True, 4),  # PLAIN_CDR2_BE, PLAIN_CDR2_LE
}
_U32 = {True: struct.Struct("<I"), False: struct.Struct(">I")}


class _Walker:
    __slots__ = ("buf", "end", "limits", "u32", "what")

    def __init__(self, buf: bytes, little: bool, limits: MessageLimits, what: str) -> None:
        self.buf = buf
        self.end = len(buf) - 4  # payload offsets start after the encapsulation header
        self.u32 = _U32[little].unpack_from
        self.limits = limits
        self.what = what

    def _short(self, path: str) -> MessageRejectedError:
        return MessageRejectedError(
            f"malformed {self.what}: {path or 'the message'} runs past the end of its "
            f"{self.end + 4} bytes (truncated, or not CDR)")

    def count(self, o: int, path: str) -> tuple[int, int]:
        o += (-o) % 4
        if o + 4 > self.end:
            raise self._short(path)
        return self.u32(self.buf, o + 4)[0], o + 4

    def run(self, ops: list[_Op], o: int) -> int:
        for op in ops:
            kind = op[0]
            if kind == "prim":
                o += (-o) % op[1]
                o += op[2]
                if o > self.end:
                    raise self._short("")
            elif kind == "str":
                n, o = self.count(o, "a string")
                if op[1] and n > op[1] + 1:
                    raise MessageRejectedError(
                        f"malformed {self.what}: a string of {n} bytes exceeds its bound {op[1]}")
                o += n
                if o > self.end:
                    raise self._short("a string")
            elif kind == "seq":
                _, align, size, cap, path, bound = op
                n, o = self.count(o, path)
                self.check_count(n, cap, path, bound)
                if n:
                    o += (-o) % align
                    o += n * size
                    if o > self.end:
                        raise self._short(path)
            elif kind == "vseq":
                _, sub, cap, path, bound = op
                n, o = self.count(o, path)
                self.check_count(n, cap, path, bound)
                if n * 4 > self.end - o:  # every element takes at least 4 bytes here
                    raise self._short(path)
                for _ in range(n):
                    o = self.run(sub, o)
            elif kind == "sseq":
                _, sbound, cap, path, bound = op
                n, o = self.count(o, path)
                self.check_count(n, cap, path, bound)
                buf, end, u32 = self.buf, self.end, self.u32
                if n * 4 > end - o:
                    raise self._short(path)
                for _ in range(n):
                    o += (-o) % 4
                    if o + 4 > end:
                        raise self._short(path)
                    k = u32(buf, o + 4)[0]
                    if sbound and k > sbound + 1:
                        raise MessageRejectedError(
                            f"malformed {self.what}: a string of {path} exceeds its bound")
                    o += 4 + k
                if o > end:
                    raise self._short(path)
            else:  # "arr"
                for _ in range(op[1]):
                    o = self.run(op[2], o)
        return o

    def check_count(self, n: int, cap: str, path: str, bound: int) -> None:
        if bound and n > bound:
            raise MessageRejectedError(
                f"malformed {self.what}: {path} has {n} entries, its type allows {bound}")
        if cap == "bytes":  # bounded by the message size, checked before the walk
            return
        if cap == "mesh":
            limit, param = self.limits.max_mesh_vertices, "max_mesh_vertices"
        else:
            limit, param = self.limits.max_message_entries, "max_message_entries"
        if n > limit:
            raise MessageRejectedError(
                f"{self.what} refused: {path} has {n:,} entries, above the node's {param} "
                f"parameter ({limit:,}); raise the parameter if such messages are intended")


def check_serialized(raw: bytes, msg_type: Any, limits: MessageLimits = DEFAULT_MESSAGE_LIMITS,
                     what: str = "") -> None:
    """Raise :class:`MessageRejectedError` when the serialized ``raw`` message of ``msg_type``
    is over a cap of ``limits`` or not well-formed CDR; reads counts only (time bounded by the
    caps, no per-entry allocation)."""
    what = what or msg_type.__name__
    size = len(raw)
    if size > limits.max_message_bytes:
        from ..load_limits import format_bytes

        raise MessageRejectedError(
            f"{what} refused: {format_bytes(size)} serialized, above the node's "
            f"max_message_bytes parameter ({format_bytes(limits.max_message_bytes)}); raise the "
            "parameter if such messages are intended")
    if size < 4:
        raise MessageRejectedError(f"malformed {what}: {size} bytes, no CDR header")
    enc = _ENCAPSULATIONS.get(bytes(raw[:2]))
    if enc is None:
        raise MessageRejectedError(
            f"malformed {what}: unknown CDR encapsulation {bytes(raw[:2]).hex()}")
    little, max_align = enc
    try:
        ops = _layout(msg_type, max_align)
    except (TypeError, KeyError, AttributeError, ImportError) as exc:  # pragma: no cover
        raise MessageRejectedError(f"{what}: cannot check this message type: {exc}") from None
    _Walker(raw, little, limits, what).run(ops, 0)


def decode(raw: Union[bytes, bytearray, memoryview], msg_type: Any,
           limits: MessageLimits = DEFAULT_MESSAGE_LIMITS, what: str = "") -> Any:
    """The ``msg_type`` message in the serialized ``raw`` bytes, after
    :func:`check_serialized`; raises :class:`MessageRejectedError` for a refused or malformed
    message."""
    global _deserialize
    if _deserialize is None:
        from rclpy.serialization import deserialize_message

        _deserialize = deserialize_message
    data = raw if isinstance(raw, bytes) else bytes(raw)
    check_serialized(data, msg_type, limits, what)
    try:
        return _deserialize(data, msg_type)
    except Exception as exc:
        raise MessageRejectedError(
            f"malformed {what or msg_type.__name__}: {type(exc).__name__}: {exc}") from None


_deserialize: Optional[Callable[[bytes, Any], Any]] = None
RawCallback = Callable[..., None]


def checked_callback(
    msg_type: Any,
    callback: Callable[..., None],
    limits: Callable[[], MessageLimits],
    on_reject: Callable[[MessageRejectedError], None],
    what: str = "",
    with_info: bool = False,
) -> RawCallback:
    """A ``raw=True`` subscription callback that decodes each message with :func:`decode`
    (caps from ``limits()`` at that moment) and passes it to ``callback(msg)``, or
    ``callback(msg, info)`` with ``with_info`` (rclpy passes the message info to callbacks that
    take two arguments: Iron and later); refused messages go to ``on_reject(error)``."""

    def on_raw(raw: bytes) -> None:
        try:
            msg = decode(raw, msg_type, limits(), what)
        except MessageRejectedError as exc:
            on_reject(exc)
            return
        callback(msg)

    def on_raw_info(raw: bytes, info: Any) -> None:
        try:
            msg = decode(raw, msg_type, limits(), what)
        except MessageRejectedError as exc:
            on_reject(exc)
            return
        callback(msg, info)

    return on_raw_info if with_info else on_raw


class CheckedSubscription:
    """A subscription whose serialized messages are size-checked (:func:`decode`, caps from
    ``limits()`` at that moment) before ``callback(msg)`` runs (``callback(msg, info)`` with
    ``with_info``: rclpy passes the message info to two-argument callbacks, Iron and later);
    refused ones go to ``on_reject(error)``. ``kwargs`` go to ``node.create_subscription``."""

    def __init__(self, node: Any, msg_type: Any, topic: str, callback: Callable[..., None],
                 qos: Any, limits: Callable[[], MessageLimits],
                 on_reject: Callable[[MessageRejectedError], None], what: str = "",
                 with_info: bool = False, **kwargs: Any) -> None:
        self._node = node
        self.callback = callback
        """The callback of decoded messages (``callback(msg)``)."""
        self._sub = node.create_subscription(
            msg_type, topic,
            checked_callback(msg_type, callback, limits, on_reject, what, with_info),
            qos, raw=True, **kwargs)

    @property
    def topic_name(self) -> str:
        return str(self._sub.topic_name)

    @property
    def subscription(self) -> Any:
        """The rclpy subscription."""
        return self._sub

    def get_publisher_count(self) -> int:
        return int(self._sub.get_publisher_count())

    def destroy(self) -> None:
        self._node.destroy_subscription(self._sub)


class _NeverExecuted:
    """Callback group whose entities the executor never waits on nor runs (rclpy's executors
    build their wait sets from the entities whose group ``can_execute``)."""

    def __init__(self) -> None:
        from rclpy.callback_groups import CallbackGroup

        self._group = type("NeverExecutedCallbackGroup", (CallbackGroup,), {
            "can_execute": lambda self, entity: False,
            "beginning_execution": lambda self, entity: False,
            "ending_execution": lambda self, entity: None,
        })()

    @property
    def group(self) -> Any:
        return self._group


class OnDemandSubscription:
    """A subscription read only when asked: DDS keeps the newest ``depth`` samples in the reader
    (its KEEP_LAST history) and :meth:`take` takes them, serialized, with their message info.

    For a node that needs the latest value of a fast topic now and then (the planner's start
    state): a regular subscription wakes the node's executor for every message (100 Hz joint
    states cost the idle planner ~25 % of a core in rclpy's wait-set handling); this one never
    enters the executor's wait set. ``node.create_subscription`` is used with a callback group
    the executor never runs, so the usual graph, QoS and discovery behaviour is kept. Not
    thread-safe: serialize calls to :meth:`take`.
    """

    def __init__(self, node: Any, msg_type: Any, topic: str, qos: Any) -> None:
        self.msg_type = msg_type
        self._sub = node.create_subscription(
            msg_type, topic, lambda raw: None, qos, callback_group=_NeverExecuted().group,
            raw=True)

    @property
    def topic_name(self) -> str:
        return str(self._sub.topic_name)

    @property
    def subscription(self) -> Any:
        return self._sub

    def take(self) -> list[tuple[bytes, dict[str, Any]]]:
        """Every sample waiting in the reader, oldest first: (serialized bytes, message info
        with ``source_timestamp`` / ``received_timestamp`` in ns where the RMW gives them)."""
        out: list[tuple[bytes, dict[str, Any]]] = []
        with self._sub.handle:
            while True:
                taken = self._sub.handle.take_message(self.msg_type, True)
                if taken is None:
                    return out
                raw, info = taken
                out.append((raw, info if isinstance(info, dict) else {}))
