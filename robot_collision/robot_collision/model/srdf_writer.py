"""Writing ``disable_collisions`` entries into a new SRDF or merging them into an existing one.

Merging keeps every element of the existing SRDF (groups, states, end effectors, its own
``disable_collisions`` with their reasons) and appends the new pairs that it does not already
disable (in either link order), after its last ``disable_collisions`` element. Comments of the
existing file are not kept (the safe XML parser drops them).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Optional, Union

from ..errors import SRDFError
from ..safe_xml import parse_xml
from .urdf import read_xml_source

__all__ = ["srdf_with_disabled_pairs"]

PairWithReason = tuple[str, str, str]  # (link1, link2, reason)


def srdf_with_disabled_pairs(
    robot_name: str,
    pairs: Iterable[PairWithReason],
    existing: Union[str, os.PathLike[str], None] = None,
    comment: Optional[str] = None,
) -> tuple[str, int]:
    """SRDF text with ``pairs`` as ``<disable_collisions link1 link2 reason/>``, merged into
    ``existing`` (an SRDF path or XML string) if given. ``comment`` goes before the new
    entries. Returns ``(xml_text, number of entries added)``."""
    from lxml import etree

    if existing is not None:
        try:
            text, _ = read_xml_source(existing, "SRDF")
        except Exception as exc:
            raise SRDFError(str(exc)) from exc
        root = parse_xml(text, "SRDF", SRDFError)
        if root.tag != "robot":
            raise SRDFError(f"SRDF root element must be <robot>, got <{root.tag}>")
    else:
        root = etree.Element("robot", name=robot_name)
    have = {
        frozenset((el.get("link1"), el.get("link2")))
        for el in root.findall("disable_collisions")
    }
    existing_dc = root.findall("disable_collisions")
    anchor = existing_dc[-1] if existing_dc else None
    new = []
    for a, b, reason in pairs:
        key = frozenset((a, b))
        if key in have:
            continue
        have.add(key)
        el = etree.Element("disable_collisions", link1=a, link2=b, reason=reason)
        new.append(el)
    items = ([etree.Comment(f" {comment} ")] if comment and new else []) + new
    if anchor is not None:
        for el in reversed(items):
            anchor.addnext(el)
    else:
        for el in items:
            root.append(el)
    etree.indent(root, space="  ")
    xml = etree.tostring(root, encoding="unicode", pretty_print=True)
    return '<?xml version="1.0"?>\n' + xml, len(new)
