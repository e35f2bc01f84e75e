"""Argument digests: SHA-256 over the RFC 8785 (JCS) canonical form, the same in Python, in
Rust and on the command line; checked against RFC 8785's published examples and, on generated
values, against an independent implementation (the `rfc8785` package)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import subprocess

import pytest
import rfc8785

import resumable_kernel as rk

# RFC 8785 section 3.2.4: the input, and the canonical bytes it publishes (in hex).
RFC_INPUT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""


def test_the_section_3_2_4_example_gives_its_published_bytes() -> None:
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert rk.canonical_json(RFC_INPUT) == expected
    assert rk.canonical(json.loads(RFC_INPUT)) == expected
    assert rk.digest_json(RFC_INPUT) == hashlib.sha256(expected.encode()).hexdigest()
    assert rfc8785.dumps(json.loads(RFC_INPUT)) == expected.encode()


def test_members_sort_by_utf16_code_units_as_section_3_2_3_sorts_them() -> None:
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    keys = [k for k in json.loads(rk.canonical(value))]
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


@pytest.mark.parametrize(
    "bits, expected",
    [
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7FEFFFFFFFFFFFFF, "1.7976931348623157e+308"),
        (0xFFEFFFFFFFFFFFFF, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xC340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44B52D02C7E14AF5, "9.999999999999997e+22"),
        (0x44B52D02C7E14AF6, "1e+23"),
        (0x44B52D02C7E14AF7, "1.0000000000000001e+23"),
        (0x444B1AE4D6E2EF4E, "999999999999999700000"),
        (0x444B1AE4D6E2EF4F, "999999999999999900000"),
        (0x444B1AE4D6E2EF50, "1e+21"),
        (0x3EB0C6F7A0B5ED8C, "9.999999999999997e-7"),
        (0x3EB0C6F7A0B5ED8D, "0.000001"),
        (0x41B3DE4355555553, "333333333.3333332"),
        (0x41B3DE4355555554, "333333333.33333325"),
        (0x41B3DE4355555555, "333333333.3333333"),
        (0x41B3DE4355555556, "333333333.3333334"),
        (0x41B3DE4355555557, "333333333.33333343"),
        (0xBECBF647612F3696, "-0.0000033333333333333333"),
        (0x43143FF3C1CB0959, "1424953923781206.2"),
    ],
)
def test_numbers_are_written_as_appendix_b_writes_them(bits: int, expected: str) -> None:
    import struct

    f = struct.unpack(">d", bits.to_bytes(8, "big"))[0]
    assert rk.canonical(f) == expected
    assert rk.canonical([f]) == f"[{expected}]"


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        {"a": [1, math.nan]},
        2**53,
        -(2**53),
        10**30,
        {1: "an int key"},
        {"a": b"bytes"},
        {"a": {1, 2}},
        object(),
        "\ud800",
        {"\udc00": 1},
    ],
    ids=repr,
)
def test_what_is_not_json_is_refused_with_the_one_exception(value) -> None:
    with pytest.raises(rk.ResumableError):
        rk.digest(value)


def test_a_container_holding_itself_is_refused() -> None:
    loop: list = []
    loop.append(loop)
    with pytest.raises(rk.ResumableError, match="nested deeper"):
        rk.digest(loop)


def test_a_text_that_readers_disagree_on_is_refused() -> None:
    for text in ['{"a": 1, "a": 2}', '"\\ud800"', "9007199254740992", "1e400", "NaN", "[1,]"]:
        with pytest.raises(rk.ResumableError):
            rk.digest_json(text)


def generated(rng: random.Random, depth: int = 0):
    """A random JSON value in the domain both implementations accept: integers within
    2^53 - 1, finite doubles of every magnitude, strings across the planes (no lone
    surrogates), nested arrays and objects."""
    kinds = ["null", "bool", "int", "float", "str"] + (["list", "dict"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        bound = rng.choice([10, 2**31, 2**53 - 1])
        return rng.randint(-bound, bound)
    if kind == "float":
        while True:
            f = rng.choice(
                [
                    lambda: rng.uniform(-1e6, 1e6),
                    lambda: rng.random() * 10.0 ** rng.randint(-330, 308),
                    lambda: struct_float(rng.getrandbits(64)),
                ]
            )()
            if math.isfinite(f):
                return f
    if kind == "str":
        return "".join(random_char(rng) for _ in range(rng.randint(0, 8)))
    if kind == "list":
        return [generated(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {
        "".join(random_char(rng) for _ in range(rng.randint(0, 4))): generated(rng, depth + 1)
        for _ in range(rng.randint(0, 4))
    }


def struct_float(bits: int) -> float:
    import struct

    return struct.unpack(">d", bits.to_bytes(8, "big"))[0]


def random_char(rng: random.Random) -> str:
    plane = rng.choice(["ascii", "control", "latin", "bmp", "astral"])
    if plane == "ascii":
        return chr(rng.randint(0x20, 0x7E))
    if plane == "control":
        return chr(rng.randint(0, 0x1F))
    if plane == "latin":
        return chr(rng.randint(0x80, 0x2FF))
    if plane == "bmp":
        c = rng.randint(0x300, 0xFFFD)
        return chr(c) if not 0xD800 <= c <= 0xDFFF else "x"
    return chr(rng.randint(0x10000, 0x10FFFF))


def test_generated_values_digest_as_the_rfc8785_package_does() -> None:
    rng = random.Random(8785)
    for i in range(3000):
        value = generated(rng)
        theirs = rfc8785.dumps(value)
        assert rk.canonical(value).encode() == theirs, (i, value)
        assert rk.digest(value) == hashlib.sha256(theirs).hexdigest(), (i, value)
        # The same value written as a JSON text, spaced and in another member order.
        text = json.dumps(value, ensure_ascii=(i % 2 == 0), indent=i % 3 or None)
        assert rk.digest_json(text) == rk.digest(value), (i, text)


def test_the_command_line_prints_the_same_digest(resumable_bin) -> None:
    rng = random.Random(42)
    for _ in range(20):
        value = generated(rng)
        text = json.dumps(value, ensure_ascii=False)
        out = subprocess.run(
            [resumable_bin, "digest", "-"], input=text.encode(), capture_output=True, check=True
        )
        assert out.stdout.decode().strip() == rk.digest(value)
    bad = subprocess.run([resumable_bin, "digest", "-"], input=b'{"a":1,"a":2}', capture_output=True)
    assert bad.returncode == 2
