use super::*;
use proptest::prelude::*;

/// An owned copy of a scanner event, Bells left out (the keeper drops them past a cut), an
/// oversized payload reduced to whether it was a user variable's.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Got {
    Osc(Vec<u8>, Terminator, bool),
    OversizedUserVar,
}

fn events(chunks: &[&[u8]]) -> Vec<Got> {
    let mut s = Scanner::new();
    let mut got = Vec::new();
    for c in chunks {
        s.feed(c, &mut |ev| match ev {
            Event::Osc {
                payload,
                terminator,
                passthrough,
            } => got.push(Got::Osc(payload.to_vec(), terminator, passthrough)),
            Event::Oversized { head, .. } if head.starts_with(USER_VAR_PREFIX) => {
                got.push(Got::OversizedUserVar)
            }
            _ => {}
        });
    }
    got
}

/// Feeds `chunks` to a keeper, one every `step`, delivering after each: what the daemon got.
fn keep(chunks: &[Vec<u8>], step: Duration) -> (Vec<Vec<u8>>, u64) {
    let t0 = Instant::now();
    let mut k = Keeper::new(t0);
    let mut deliveries = Vec::new();
    let mut skipped = 0;
    for (i, c) in chunks.iter().enumerate() {
        let mut out = Vec::new();
        k.take(t0 + step * i as u32, c, &mut out);
        skipped += k.skipped();
        k.delivered();
        deliveries.push(out);
    }
    (deliveries, skipped)
}

fn text(n: usize) -> Vec<u8> {
    b"flood line\r\n".iter().copied().cycle().take(n).collect()
}

#[test]
fn bytes_below_the_rate_go_as_they_are() {
    let chunks: Vec<Vec<u8>> = (0..20).map(|_| text(100_000)).collect();
    let (got, skipped) = keep(&chunks, Duration::from_millis(100));
    assert_eq!(skipped, 0);
    assert_eq!(got, chunks);
}

#[test]
fn a_flood_is_kept_to_a_burst_then_to_the_rate() {
    // 10 MiB at once, then 1 MiB every 100 ms for a second.
    let mut chunks = vec![text(10 << 20)];
    chunks.extend((0..10).map(|_| text(1 << 20)));
    let (got, skipped) = keep(&chunks, Duration::from_millis(100));
    assert_eq!(got[0].len(), BURST + 1, "a burst and the CAN of the cut");
    assert_eq!(got[0].last(), Some(&CAN));
    let later: usize = got[1..].iter().map(Vec::len).sum();
    // A second at RATE, give or take the CANs and the room kept back before resuming.
    assert!(
        later <= RATE as usize + 20 && later >= RATE as usize - RESUME - 10,
        "{later} bytes kept in a second"
    );
    let total: usize = chunks.iter().map(Vec::len).sum();
    let kept: usize = got
        .iter()
        .map(|d| d.iter().filter(|b| **b != CAN).count())
        .sum();
    assert_eq!(skipped as usize, total - kept);
}

#[test]
fn sequences_among_the_bytes_left_out_are_kept_whole() {
    let mut flood = text(BURST + 1000);
    flood.extend_from_slice(b"\x1b]0;\xe2\x9c\xa6 working\x07");
    flood.extend(text(50_000));
    flood.extend_from_slice(b"\x1b]7501;state=blocked\x1b\\");
    flood.extend_from_slice(b"\x1bPtmux;\x1b\x1b]9;done\x07\x1b\\");
    flood.extend(text(50_000));
    let (got, skipped) = keep(&[flood.clone()], Duration::ZERO);
    assert!(skipped > 100_000);
    assert!(got[0].len() < BURST + 200);
    let refs: Vec<&[u8]> = got.iter().map(Vec::as_slice).collect();
    assert_eq!(events(&refs), events(&[&flood]));
    assert_eq!(events(&refs).len(), 3);
}

#[test]
fn a_sequence_cut_in_the_middle_is_seen_once_whole() {
    let mut flood = text(BURST - 5);
    flood.extend_from_slice(b"\x1b]0;a title\x07");
    flood.extend(text(1000));
    let (got, _) = keep(&[flood.clone()], Duration::ZERO);
    let refs: Vec<&[u8]> = got.iter().map(Vec::as_slice).collect();
    assert_eq!(
        events(&refs),
        vec![Got::Osc(b"0;a title".to_vec(), Terminator::Bel, false)]
    );
}

#[test]
fn an_oversized_user_variable_left_out_still_clears_the_value() {
    let mut flood = text(BURST);
    flood.extend_from_slice(b"\x1b]");
    flood.extend_from_slice(USER_VAR_PREFIX);
    flood.extend(std::iter::repeat_n(b'Q', 8000));
    flood.push(BEL);
    let (got, _) = keep(&[flood], Duration::ZERO);
    let refs: Vec<&[u8]> = got.iter().map(Vec::as_slice).collect();
    assert_eq!(events(&refs), vec![Got::OversizedUserVar]);
}

#[test]
fn sequences_past_their_cap_are_left_out_whole() {
    let mut flood = text(BURST);
    for i in 0..20_000 {
        flood.extend_from_slice(format!("\x1b]2;title {i}\x07").as_bytes());
    }
    let (got, _) = keep(&[flood], Duration::ZERO);
    assert!(got[0].len() <= BURST + 1 + MAX_SEQUENCES);
    let refs: Vec<&[u8]> = got.iter().map(Vec::as_slice).collect();
    let seen = events(&refs);
    assert!(seen.len() > 1000);
    // Whole ones, in order, from the first.
    for (i, g) in seen.iter().enumerate() {
        assert_eq!(
            g,
            &Got::Osc(format!("2;title {i}").into_bytes(), Terminator::Bel, false)
        );
    }
}

fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (1usize..300_000).prop_map(text),
        Just(b"\x1b]0;title\x07".to_vec()),
        Just(b"\x1b]7501;state=working\x1b\\".to_vec()),
        Just(b"\x1bPtmux;\x1b\x1b]9;note\x07\x1b\\".to_vec()),
        Just(b"\x1b[1mbold\x1b[0m".to_vec()),
        Just(b"\x1b]0;half".to_vec()),
        Just(vec![0x18]),
        Just(vec![0x07]),
        Just(vec![0x1b]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever the pace and however the bytes are read, the daemon's scanner fed what is kept
    /// sees every sequence the pane wrote, in order (below the sequences' cap).
    #[test]
    fn what_is_kept_says_every_sequence(
        pieces in prop::collection::vec(piece(), 1..40),
        cuts in prop::collection::vec(1usize..400_000, 1..10),
        step_ms in 0u64..200,
    ) {
        let all: Vec<u8> = pieces.concat();
        let mut chunks = Vec::new();
        let mut rest = all.as_slice();
        for c in cuts.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (a, b) = rest.split_at((*c).min(rest.len()));
            chunks.push(a.to_vec());
            rest = b;
        }
        let (got, _) = keep(&chunks, Duration::from_millis(step_ms));
        let refs: Vec<&[u8]> = got.iter().map(Vec::as_slice).collect();
        prop_assert_eq!(events(&refs), events(&[&all]));
    }
}

#[test]
fn a_sequence_left_open_at_a_cut_does_not_run_into_what_follows() {
    // Open at the cut, then too long (dropped by both scanners): the daemon's scanner never saw
    // its end, and must not take the next text for its payload.
    let mut first = text(BURST - 4);
    first.extend_from_slice(b"\x1b]0;half");
    let mut second = vec![b'x'; 5000];
    second.push(BEL);
    let chunks = [first, second, b"z\x07".to_vec()];
    let (got, _) = keep(&chunks, Duration::from_secs(1));
    assert!(got[0].ends_with(b"\x1b]0;\x18"), "cut inside the sequence");
    assert_eq!(got[2], b"z\x07", "bytes as they are again");
    let refs: Vec<&[u8]> = got.iter().map(Vec::as_slice).collect();
    assert_eq!(events(&refs), Vec::<Got>::new());
}
