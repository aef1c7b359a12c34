use std::io::Cursor;

use bytes::{Bytes, BytesMut};
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::{Frame, FrameHeader};

use super::*;

const MAX: usize = 200_000;

/// A server's frame as tungstenite writes it (unmasked).
fn server_frame(opcode: OpCode, is_final: bool, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Frame::message(Bytes::copy_from_slice(payload), opcode, is_final)
        .format(&mut out)
        .expect("formatted");
    out
}

/// A server's control frame as tungstenite writes it.
fn control(frame: Frame) -> Vec<u8> {
    let mut out = Vec::new();
    frame.format(&mut out).expect("formatted");
    out
}

fn text(is_final: bool, payload: &[u8]) -> Vec<u8> {
    server_frame(OpCode::Data(Data::Text), is_final, payload)
}

fn continuation(is_final: bool, payload: &[u8]) -> Vec<u8> {
    server_frame(OpCode::Data(Data::Continue), is_final, payload)
}

/// Every event of `bytes`, fed at once.
fn events(bytes: &[u8]) -> Result<Vec<Incoming>, Violation> {
    let mut reader = FrameReader::new(MAX, BytesMut::new());
    reader.buffer(bytes.len()).extend_from_slice(bytes);
    let mut all = Vec::new();
    while let Some(event) = reader.next()? {
        all.push(event);
    }
    Ok(all)
}

/// Every event of `bytes`, fed `step` bytes at a time.
fn events_in_steps(bytes: &[u8], step: usize) -> Result<Vec<Incoming>, Violation> {
    let mut reader = FrameReader::new(MAX, BytesMut::new());
    let mut all = Vec::new();
    for piece in bytes.chunks(step) {
        reader.buffer(piece.len()).extend_from_slice(piece);
        while let Some(event) = reader.next()? {
            all.push(event);
        }
    }
    Ok(all)
}

#[test]
fn text_frames_of_each_length_form_are_read_whole() {
    for len in [0, 1, 125, 126, 65_535, 65_536, 150_000] {
        let payload = vec![b'x'; len];
        let got = events(&text(true, &payload)).expect("read");
        assert_eq!(
            got,
            vec![Incoming::Text(Bytes::from(payload))],
            "{len} bytes"
        );
    }
}

#[test]
fn fragments_are_joined_around_a_ping_and_any_split_of_the_bytes_reads_the_same() {
    let mut bytes = text(false, b"{\"jsonrpc\":");
    bytes.extend(control(Frame::ping(&b"are you there"[..])));
    bytes.extend(continuation(false, b"\"2.0\","));
    bytes.extend(continuation(true, b"\"method\":\"x\"}"));
    bytes.extend(text(true, b"next"));
    let want = vec![
        Incoming::Ping(Bytes::from_static(b"are you there")),
        Incoming::Text(Bytes::from_static(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}",
        )),
        Incoming::Text(Bytes::from_static(b"next")),
    ];
    assert_eq!(events(&bytes).expect("read"), want);
    for step in 1..bytes.len() {
        assert_eq!(events_in_steps(&bytes, step).expect("read"), want, "{step}");
    }
}

#[test]
fn binary_messages_and_pongs_are_skipped() {
    let mut bytes = server_frame(OpCode::Data(Data::Binary), true, b"\x00\x01");
    bytes.extend(server_frame(OpCode::Data(Data::Binary), false, b"part"));
    bytes.extend(continuation(true, b"rest"));
    bytes.extend(control(Frame::pong(&b""[..])));
    bytes.extend(text(true, b"after"));
    assert_eq!(
        events(&bytes).expect("read"),
        vec![Incoming::Text(Bytes::from_static(b"after"))]
    );
}

#[test]
fn a_close_frame_gives_its_code_or_none() {
    let mut bytes = vec![0x88, 0x02, 0x03, 0xE8];
    bytes.extend([0x88, 0x00]);
    assert_eq!(
        events(&bytes).expect("read"),
        vec![Incoming::Close(Some(1000)), Incoming::Close(None)]
    );
}

#[test]
fn frames_that_break_the_protocol_are_refused_with_1002() {
    let cases: [(&str, Vec<u8>); 9] = [
        ("masked", vec![0x81, 0x81, 1, 2, 3, 4, b'x' ^ 1]),
        ("reserved bit", vec![0xC1, 0x01, b'x']),
        ("unknown data opcode", vec![0x83, 0x00]),
        ("unknown control opcode", vec![0x8B, 0x00]),
        ("fragmented ping", vec![0x09, 0x00]),
        ("long ping", {
            let mut f = vec![0x89, 126, 0, 126];
            f.extend([0; 126]);
            f
        }),
        ("continuation of nothing", continuation(true, b"x")),
        ("new message inside a fragmented one", {
            let mut f = text(false, b"a");
            f.extend(text(true, b"b"));
            f
        }),
        ("one-byte close", vec![0x88, 0x01, 0x03]),
    ];
    for (what, bytes) in cases {
        let got = events(&bytes);
        assert!(
            matches!(&got, Err(v @ Violation::Protocol(_)) if v.close_code() == 1002),
            "{what}: {got:?}"
        );
    }
}

#[test]
fn a_frame_or_a_message_over_the_limit_is_refused_with_1009_before_it_is_buffered() {
    // The header alone says it: nothing of the payload needs to arrive.
    let mut header = vec![0x81, 127];
    header.extend((1u64 << 40).to_be_bytes());
    let got = events(&header);
    assert!(
        matches!(&got, Err(v @ Violation::TooBig { .. }) if v.close_code() == 1009),
        "{got:?}"
    );

    let mut fragments = text(false, &vec![b'a'; MAX / 2]);
    fragments.extend(continuation(false, &vec![b'b'; MAX / 2]));
    fragments.extend(continuation(true, b"one too many"));
    assert!(matches!(events(&fragments), Err(Violation::TooBig { .. })));

    let mut binary = server_frame(OpCode::Data(Data::Binary), false, &vec![0; MAX]);
    binary.extend(continuation(true, b"!"));
    assert!(matches!(events(&binary), Err(Violation::TooBig { .. })));
}

#[test]
fn a_text_message_that_is_not_utf8_is_refused_with_1007_whole_or_in_fragments() {
    let got = events(&text(true, b"{\"a\":\"\xff\"}"));
    assert!(
        matches!(&got, Err(v @ Violation::NotText) if v.close_code() == 1007),
        "{got:?}"
    );
    // A character cut between two fragments is fine; only the whole message is checked.
    let mut split = text(false, "é".as_bytes().get(..1).unwrap());
    split.extend(continuation(true, "é".as_bytes().get(1..).unwrap()));
    assert_eq!(
        events(&split).expect("read"),
        vec![Incoming::Text(Bytes::from("é"))]
    );
}

#[test]
fn encoded_frames_are_masked_and_read_back_by_tungstenite() {
    let mut keys = MaskKeys::new();
    for len in [0, 5, 125, 126, 65_535, 65_536] {
        let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mask = keys.next();
        let mut out = Vec::new();
        encode(TEXT, &payload, Some(mask), &mut out);
        let mut cursor = Cursor::new(&out[..]);
        let (header, length) = FrameHeader::parse(&mut cursor)
            .expect("a header")
            .expect("whole");
        assert_eq!(length, len as u64);
        assert!(header.is_final);
        assert_eq!(header.opcode, OpCode::Data(Data::Text));
        assert_eq!(header.mask, Some(mask));
        let start = cursor.position() as usize;
        let unmasked: Vec<u8> = out[start..]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        assert_eq!(unmasked, payload, "{len} bytes");
    }
}

#[test]
fn a_servers_frames_are_unmasked_and_read_back_by_tungstenite() {
    for len in [0, 125, 126, 65_536] {
        let payload = vec![b'y'; len];
        let mut out = Vec::new();
        encode(TEXT, &payload, None, &mut out);
        let mut cursor = Cursor::new(&out[..]);
        let (header, length) = FrameHeader::parse(&mut cursor)
            .expect("a header")
            .expect("whole");
        assert_eq!((length, header.mask), (len as u64, None));
        assert_eq!(&out[cursor.position() as usize..], &payload[..]);
    }
}

#[test]
fn mask_keys_differ_across_batches() {
    let mut keys = MaskKeys::new();
    let all: std::collections::HashSet<[u8; 4]> = (0..600).map(|_| keys.next()).collect();
    // 600 keys of 32 random bits: a repeat is unlikely, and many would mean no randomness.
    assert!(all.len() > 590, "{} distinct keys of 600", all.len());
}
