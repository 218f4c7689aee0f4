use super::*;

#[derive(Debug, PartialEq)]
struct V1 {
    name: String,
    weight: i32,
}

impl Versioned for V1 {
    const VERSION: i16 = 1;
    fn encode_body(&self, w: &mut Writer) {
        w.string(&self.name);
        w.i32(self.weight);
    }
    fn decode_body(version: i16, r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let name = r.string("name")?;
        let weight = if version >= 1 { r.i32("weight")? } else { 1 };
        Ok(Self { name, weight })
    }
}

#[test]
fn varints_round_trip_at_the_edges() {
    for value in [0, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
        let mut w = Writer::new();
        w.uvarint(value);
        let bytes = w.finish();
        let mut r = Reader::new(&bytes);
        assert_eq!(r.uvarint("v"), Ok(value));
        assert_eq!(r.remaining(), 0);
    }
}

#[test]
fn overlong_and_overflowing_varints_are_refused() {
    let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
    assert!(matches!(
        Reader::new(&overflow).uvarint("v"),
        Err(DecodeError::Invalid { .. })
    ));
    assert!(matches!(
        Reader::new(&[0x80, 0x80]).uvarint("v"),
        Err(DecodeError::Truncated { .. })
    ));
}

#[test]
fn counts_larger_than_the_message_are_refused() {
    let mut w = Writer::new();
    w.uvarint(1 << 40);
    let bytes = w.finish();
    assert!(matches!(
        Reader::new(&bytes).count("tasks", 1),
        Err(DecodeError::Invalid { field: "tasks", .. })
    ));
}

#[test]
fn versioned_round_trip_and_forward_compatibility() {
    let v = V1 {
        name: "a".into(),
        weight: 7,
    };
    assert_eq!(V1::decode(&v.encode()), Ok(v));
    // Version 5 with an extra trailing field reads as version 1.
    let mut w = Writer::new();
    w.i16(5);
    w.string("b");
    w.i32(3);
    w.u64(99);
    let expected = V1 {
        name: "b".into(),
        weight: 3,
    };
    assert_eq!(V1::decode(&w.finish()), Ok(expected));
    // Version 0 has no weight.
    let mut w = Writer::new();
    w.i16(0);
    w.string("c");
    assert_eq!(V1::decode(&w.finish()).map(|v| v.weight), Ok(1));
}

#[test]
fn versioned_bad_input_is_an_error() {
    assert!(matches!(
        V1::decode(&[]),
        Err(DecodeError::Truncated { .. })
    ));
    assert_eq!(
        V1::decode(&[0xff, 0xff]),
        Err(DecodeError::NegativeVersion(-1))
    );
    // Claims a string longer than the payload.
    assert!(matches!(
        V1::decode(&[0, 1, 0xff, 0xff, 0x03, b'x']),
        Err(DecodeError::Invalid { field: "name", .. })
    ));
    assert!(matches!(
        V1::decode(&[0, 1, 1, 0xff, 0, 0, 0, 1]),
        Err(DecodeError::Invalid { field: "name", .. })
    ));
    // Bytes after a complete version-1 payload.
    assert_eq!(
        V1::decode(&[0, 1, 1, b'a', 0, 0, 0, 1, 9]),
        Err(DecodeError::TrailingBytes {
            version: 1,
            count: 1
        })
    );
}
