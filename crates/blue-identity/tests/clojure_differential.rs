//! Differential test against real Clojure `pr-str`.
//!
//! Needs `clojure` on `PATH` (Debian: `apt-get install clojure`), so it is
//! ignored by a plain `cargo test`; `cargo xtask test` installs Clojure and
//! runs it (`cargo test -p blue-identity --test clojure_differential --
//! --ignored`). All random vectors are rendered in ONE `clojure -e` invocation because the
//! JVM starts slowly. Set `BLUE_CLOJURE_SEED` to replay a run.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use blue_identity::{render, state_identity_hash};

const CASES: usize = 50;

/// Strings are passed as hex of their UTF-8 bytes and pr-str output comes
/// back as hex, so no quoting or console encoding is involved.
const PROGRAM: &str = r#"
(defn unhex [^String h]
  (String. (byte-array (map (fn [[a b]] (unchecked-byte (Integer/parseInt (str a b) 16)))
                            (partition 2 h)))
           "UTF-8"))
(defn hex [^bytes bs] (apply str (map #(format "%02x" (bit-and % 0xff)) bs)))
(doseq [v (read-string (slurp *in*))]
  (println "ROW" (hex (.getBytes ^String (pr-str (vec (map #(if (= % :nil) nil (unhex %)) v))) "UTF-8"))))
"#;

/// xorshift64*: tiny deterministic generator, good enough for test inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn char(&mut self) -> char {
        const PICKS: [char; 16] = [
            '"', '\\', '\n', '\t', '\r', '\u{0c}', '\u{08}', '\u{7f}', 'é', '日', '😀', '\u{85}',
            '\u{2028}', ' ', '[', 'n',
        ];
        match self.below(4) {
            0 => PICKS[usize::try_from(self.below(16)).unwrap_or(0)],
            1 => char::from_u32(u32::try_from(self.below(0x20)).unwrap_or(0)).unwrap_or('x'),
            2 => char::from_u32(u32::try_from(0x20 + self.below(0x5f)).unwrap_or(0x20))
                .unwrap_or('x'),
            _ => loop {
                if let Some(c) = char::from_u32(u32::try_from(self.below(0x11_0000)).unwrap_or(0)) {
                    break c;
                }
            },
        }
    }

    fn identity(&mut self) -> Vec<Option<String>> {
        (0..self.below(6))
            .map(|_| {
                (self.below(5) != 0).then(|| (0..self.below(12)).map(|_| self.char()).collect())
            })
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex from clojure"))
        .collect()
}

#[test]
#[ignore = "needs clojure on PATH (apt-get install clojure); cargo xtask test runs it"]
fn random_vectors_render_like_real_clojure() {
    let seed = std::env::var("BLUE_CLOJURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |d| d.as_secs())
        })
        | 1;
    println!("BLUE_CLOJURE_SEED={seed}");
    let mut rng = Rng(seed);
    let inputs: Vec<Vec<Option<String>>> = (0..CASES).map(|_| rng.identity()).collect();
    let edn = inputs
        .iter()
        .map(|v| {
            let elements: Vec<String> = v
                .iter()
                .map(|e| {
                    e.as_ref()
                        .map_or(":nil".into(), |s| format!("\"{}\"", hex(s.as_bytes())))
                })
                .collect();
            format!("[{}]", elements.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n");

    let child = Command::new("clojure")
        .args(["-e", PROGRAM])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = child.expect("running `clojure` (apt-get install clojure)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("[{edn}]").as_bytes())
        .expect("write to clojure");
    let output = child.wait_with_output().expect("clojure output");
    assert!(
        output.status.success(),
        "clojure failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("ascii output");
    let rows: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("ROW "))
        .collect();
    assert_eq!(rows.len(), inputs.len(), "clojure output: {stdout}");

    for (input, row) in inputs.iter().zip(rows) {
        let expected = String::from_utf8(unhex(row)).expect("clojure printed UTF-8");
        assert_eq!(render(input), expected, "input {input:?} (seed {seed})");
        assert_eq!(state_identity_hash(input), {
            use sha2::Digest;
            hex(&sha2::Sha256::digest(expected.as_bytes()))
        });
    }
    println!("{} random vectors matched Clojure", inputs.len());
}
