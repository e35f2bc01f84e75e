//! RFC 8785 (JCS) canonical forms and digests, checked against the RFC's own published
//! examples: the number table of its appendix B, the sorting example of section 3.2.3 and the
//! whole-object example of section 3.2.4, and the refusals of what is not I-JSON.

use resumable_audit::jcs::{self, Value};
use resumable_kernel::Digest;

fn number(bits: u64) -> String {
    let mut out = String::new();
    jcs::write_number(f64::from_bits(bits), &mut out).unwrap();
    out
}

#[test]
fn numbers_are_written_as_rfc_8785_appendix_b_writes_them() {
    let table: [(u64, &str); 24] = [
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for (bits, expected) in table {
        assert_eq!(number(bits), expected, "{bits:#018x}");
    }
}

#[test]
fn nan_and_the_infinities_are_refused() {
    for bits in [
        0x7fffffffffffffff_u64,
        0x7ff0000000000000,
        0xfff0000000000000,
    ] {
        let f = f64::from_bits(bits);
        assert!(jcs::write_number(f, &mut String::new()).is_err(), "{f}");
        assert!(Value::number(f).is_err(), "{f}");
    }
}

#[test]
fn members_are_sorted_by_utf16_code_units_as_section_3_2_3_sorts_them() {
    let text = r#"{
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\ud83d\ude00": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis"
    }"#;
    let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
        \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
        \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
    assert_eq!(jcs::canonical(text).unwrap(), expected);
}

#[test]
fn the_example_of_section_3_2_4_gives_its_published_bytes() {
    let text = r#"{
        "numbers": [333333333.33333329, 1E30, 4.50,
                    2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
    }"#;
    let canonical = jcs::canonical(text).unwrap();
    assert_eq!(
        canonical,
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
    // The UTF-8 bytes section 3.2.4 prints, in hex.
    let published = "7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72 \
        75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a \
        5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31 \
        65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37 \
        5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30 \
        30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d";
    let bytes: Vec<u8> = (published.split_whitespace())
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect();
    assert_eq!(canonical.as_bytes(), &bytes[..]);
    assert_eq!(jcs::digest(text).unwrap(), Digest::of(&bytes));
}

#[test]
fn whitespace_key_order_and_number_spelling_do_not_change_the_digest() {
    let a = jcs::digest(r#"{"post": 42, "tags": ["a", "b"], "ratio": 0.5}"#).unwrap();
    let b = jcs::digest("{\"ratio\":5e-1,\n\"tags\":[\"a\",\"b\"],\"post\":42.0}").unwrap();
    assert_eq!(a, b);
    let c = jcs::digest(r#"{"post": 43, "tags": ["a", "b"], "ratio": 0.5}"#).unwrap();
    assert_ne!(a, c);
    // The digest is SHA-256 of the canonical bytes.
    let canonical = r#"{"post":42,"ratio":0.5,"tags":["a","b"]}"#;
    assert_eq!(a, Digest::of(canonical.as_bytes()));
}

#[test]
fn strings_keep_non_ascii_as_utf8_and_escape_only_what_rfc_8785_escapes() {
    let text = r#""\u00e9\u4e2d\ud83d\ude00 \/ \u007f \u001f \b\f\n\r\t""#;
    assert_eq!(
        jcs::canonical(text).unwrap(),
        "\"é中😀 / \u{7f} \\u001f \\b\\f\\n\\r\\t\""
    );
}

#[test]
fn what_readers_disagree_on_is_refused_with_its_offset() {
    let refused = [
        (r#"{"a": 1, "a": 2}"#, 9, "appears twice"),
        (r#""\ud800""#, 1, "lone high surrogate"),
        (r#""\udc00x""#, 1, "lone low surrogate"),
        (r#""\ud800\u0041""#, 1, "lone high surrogate"),
        ("9007199254740992", 0, "exact range"),
        ("-9007199254740992", 0, "exact range"),
        ("123456789012345678901234567890", 0, "exact range"),
        ("1e400", 0, "beyond what a double holds"),
        ("-1e400", 0, "beyond what a double holds"),
        ("NaN", 0, "not a JSON value"),
        ("Infinity", 0, "not a JSON value"),
        ("01", 1, "more than one JSON value"),
        ("1.", 2, "not a JSON number"),
        ("[1,]", 3, "not a JSON value"),
        ("{\"a\" 1}", 5, "expected `:`"),
        ("\"a\u{1}\"", 2, "control character"),
        ("1 2", 2, "more than one JSON value"),
        ("", 0, "ends where a value should be"),
        ("\u{feff}1", 0, "not a JSON value"),
        (r#""\x""#, 2, "not a JSON escape"),
    ];
    for (text, offset, what) in refused {
        let e = jcs::canonical(text).unwrap_err();
        assert!(e.what.contains(what), "{text}: {e}");
        assert_eq!(e.offset, offset, "{text}: {e}");
    }
    // The edges of the exact range are accepted.
    assert_eq!(
        jcs::canonical("9007199254740991").unwrap(),
        "9007199254740991"
    );
    assert_eq!(
        jcs::canonical("-9007199254740991").unwrap(),
        "-9007199254740991"
    );
}

#[test]
fn nesting_is_bounded() {
    let ok = "[".repeat(jcs::MAX_DEPTH) + &"]".repeat(jcs::MAX_DEPTH);
    assert!(jcs::canonical(&ok).is_ok());
    let deep = "[".repeat(jcs::MAX_DEPTH + 1) + &"]".repeat(jcs::MAX_DEPTH + 1);
    assert!(jcs::canonical(&deep)
        .unwrap_err()
        .what
        .contains("nested deeper"));
    // Far deeper is refused the same way, without exhausting the stack.
    let far = "[".repeat(1_000_000);
    assert!(jcs::canonical(&far).is_err());
}

#[test]
fn a_value_built_by_hand_is_refused_when_it_repeats_a_name_or_leaves_the_exact_range() {
    let twice = Value::Object(vec![
        ("a".into(), Value::Null),
        ("a".into(), Value::Bool(true)),
    ]);
    assert!(twice.canonical().unwrap_err().what.contains("twice"));
    assert!(Value::integer(1 << 53).is_err());
    assert!(Value::integer(-(1 << 53)).is_err());
    assert_eq!(
        Value::integer((1 << 53) - 1).unwrap().canonical().unwrap(),
        "9007199254740991"
    );
}
