//! What the bot challenge at join costs: the client's expected hashes and time at each
//! difficulty (the Rust solver measured here; the page's JavaScript solver measured under node,
//! as a stand-in for a browser's worker; a phone extrapolated from it), and the server's cost to
//! issue a challenge and to check a proof (ns each). The figures are in BENCHMARKS.md, section 13.
//!
//! Needs no Redis and no AWS. Run: `cargo bench -p lineup-tests --bench proof_of_work`
//! (node on the PATH adds the page solver's rate; without it that column is left out).

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use lineup::domain::ids::{CustomerId, EventId};
use lineup::domain::keys::KeyRing;
use lineup::domain::proof_of_work::{self, ChallengeDifficulty, ProofOfWork};
use lineup::domain::signing::SigningKey;

/// The difficulties the table shows.
const DIFFICULTIES: [u32; 6] = [12, 16, 18, 20, 22, 24];
/// How much slower a mid-range phone runs the page's solver than this machine's node: a phone's
/// single core at about a third to a quarter of a laptop's for integer JavaScript (an assumption,
/// stated in BENCHMARKS.md; no phone was measured).
const PHONE_SLOWDOWN: f64 = 3.5;

fn main() {
    let rust_rate = rust_solver_rate();
    let node = page_solver_rate();
    let (issue_ns, check_ns) = server_costs();

    println!(
        "client: the Rust solver {:.2} M hashes/s (one core)",
        rust_rate / 1e6
    );
    match &node {
        Some((rate, nonce)) => println!(
            "client: the page's solver (web/pow.js) under node {:.2} M hashes/s; a phone at 1/{PHONE_SLOWDOWN} of it: {:.2} M hashes/s; fixed challenge's nonce {nonce} (Rust: {})",
            rate / 1e6,
            rate / PHONE_SLOWDOWN / 1e6,
            fixed_nonce()
        ),
        None => println!("client: node not found; the page solver's rate is left out"),
    }
    println!();
    println!("| difficulty (bits) | expected hashes | Rust solver | page solver (node) | phone (est.) | phone, 95th percentile (3× mean) |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for bits in DIFFICULTIES {
        let hashes = 2f64.powi(bits as i32);
        let page = node.as_ref().map(|(rate, _)| *rate);
        let show = |rate: Option<f64>| match rate {
            Some(rate) => seconds(hashes / rate),
            None => "–".to_owned(),
        };
        println!(
            "| {bits} | {} | {} | {} | {} | {} |",
            thousands(hashes as u64),
            seconds(hashes / rust_rate),
            show(page),
            show(page.map(|rate| rate / PHONE_SLOWDOWN)),
            show(page.map(|rate| rate / PHONE_SLOWDOWN / 3.0)),
        );
    }
    println!();
    println!("server: issuing a challenge {issue_ns:.0} ns; checking a proof {check_ns:.0} ns (two keys × two windows of HMAC, one SHA-256)");
}

/// Hashes a second of [`proof_of_work::solve`], over enough challenges to take about 2 s.
fn rust_solver_rate() -> f64 {
    let difficulty = ChallengeDifficulty::new(16).unwrap();
    let started = Instant::now();
    let mut hashes = 0u64;
    let mut round = 0u8;
    while started.elapsed() < Duration::from_secs(2) {
        let challenge = [round; 32];
        hashes += black_box(proof_of_work::solve(&challenge, difficulty)).1;
        round = round.wrapping_add(1);
    }
    hashes as f64 / started.elapsed().as_secs_f64()
}

/// The nonce the Rust solver finds for the fixed challenge the node script also solves.
fn fixed_nonce() -> String {
    let mut challenge = [0u8; 32];
    hex::decode_to_slice("a1".repeat(32), &mut challenge).unwrap();
    proof_of_work::solve(&challenge, ChallengeDifficulty::new(16).unwrap()).0
}

/// The page solver's rate under node, and its nonce for the fixed challenge.
fn page_solver_rate() -> Option<(f64, String)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/proof_of_work.mjs");
    let output = Command::new("node").arg(script).arg("32").output().ok()?;
    if !output.status.success() {
        eprintln!("node failed: {}", String::from_utf8_lossy(&output.stderr));
        return None;
    }
    let line: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    Some((
        line["hashesPerSecond"].as_f64()?,
        line["fixedNonce"].as_str()?.to_owned(),
    ))
}

/// Nanoseconds to issue a challenge and to check a solved proof, during a key rotation (two
/// key versions: the worst case, four HMACs).
fn server_costs() -> (f64, f64) {
    let ring = KeyRing::new(
        SigningKey::new(vec![7u8; 32]).unwrap(),
        Some(SigningKey::new(vec![9u8; 32]).unwrap()),
    );
    let event = EventId::parse("spring-gala").unwrap();
    let customer = CustomerId::parse("0b7c1a52-3f0e-4d7e-9a41-6c2f1e8d9b10").unwrap();
    let now = SystemTime::now();
    let difficulty = ChallengeDifficulty::RECOMMENDED;
    const ROUNDS: u32 = 200_000;

    let started = Instant::now();
    for _ in 0..ROUNDS {
        black_box(ring.issue_challenge(&event, &customer, difficulty, now));
    }
    let issue = started.elapsed().as_nanos() as f64 / f64::from(ROUNDS);

    let issued = ring.issue_challenge(&event, &customer, difficulty, now);
    let mut challenge = [0u8; 32];
    hex::decode_to_slice(&issued.challenge, &mut challenge).unwrap();
    let (nonce, _) = proof_of_work::solve(&challenge, difficulty);
    let proof = ProofOfWork::parse(&issued.challenge, &nonce).unwrap();
    let started = Instant::now();
    for _ in 0..ROUNDS {
        black_box(ring.check_work(black_box(&proof), &event, &customer, now));
    }
    let check = started.elapsed().as_nanos() as f64 / f64::from(ROUNDS);
    (issue, check)
}

fn seconds(at: f64) -> String {
    if at < 1.0 {
        format!("{:.0} ms", at * 1000.0)
    } else {
        format!("{at:.1} s")
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut shown = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            shown.push(',');
        }
        shown.push(digit);
    }
    shown
}
