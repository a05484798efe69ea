// Writes what Ring holds after operation sequences drawn from fixed seeds, as a JSON object, to the path
// given: gym_swe compares it with the reference solution's (sealed checks). Nothing here says what the
// right answers are.
use ringbuf::Ring;
use std::fmt::Write;

fn run(capacity: usize, seed: u64, steps: u32) -> String {
    let mut ring = Ring::with_capacity(capacity);
    let mut state = seed;
    let mut popped: u64 = 0;
    for step in 0..steps {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        match (state >> 33) % 5 {
            0 | 1 => popped = popped * 31 % 1_000_000_007 + ring.pop().map_or(0, u64::from),
            _ => {
                ring.push(step);
            }
        }
    }
    let items: Vec<String> = ring.iter().map(|item| item.to_string()).collect();
    let last = ring.last().map_or(-1, |item| i64::from(*item));
    format!("{}|{}|{}|{}", items.join(","), ring.len(), last, popped)
}

fn main() {
    let cases: [(usize, u64, u32); 10] = [
        (2, 7, 97),
        (3, 1_000_003, 250),
        (4, 42, 61),
        (5, 2_024, 333),
        (6, 99_991, 128),
        (7, 31_337, 512),
        (8, 5, 77),
        (9, 65_537, 1_000),
        (11, 271_828, 404),
        (16, 314_159, 2_048),
    ];
    let mut json = String::from("{");
    for (number, (capacity, seed, steps)) in cases.iter().enumerate() {
        let separator = if number == 0 { "" } else { "," };
        write!(json, "{separator}\"ring_{number:02}\":\"{}\"", run(*capacity, *seed, *steps)).unwrap();
    }
    json.push('}');
    let path = std::env::args().nth(1).expect("usage: verifier_checks PATH");
    std::fs::write(path, json).expect("writing the checks");
}
