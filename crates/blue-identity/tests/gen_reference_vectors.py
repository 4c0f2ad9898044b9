#!/usr/bin/env python3
"""Regenerate tests/reference_vectors.json from real Clojure.

Every input vector below is printed by Clojure's own `pr-str` (with the
default `*print-readably*` = true), in ONE JVM invocation. To keep shell and
source quoting out of the picture, strings are handed to Clojure as hex of
their UTF-8 bytes and Clojure hands back the hex of the UTF-8 bytes of its
`pr-str` output, plus the SHA-256 it computes itself with
java.security.MessageDigest. This script checks that hash against Python's
hashlib, so the stored hashes never depend on the Rust code under test.

Usage (needs `clojure` on PATH, e.g. Debian `apt-get install clojure`):

    python3 crates/blue-identity/tests/gen_reference_vectors.py

Override the command with CLOJURE_CMD (e.g.
`CLOJURE_CMD="java -cp /usr/share/java/clojure.jar clojure.main"`).
"""

import hashlib
import json
import os
import shlex
import subprocess
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference_vectors.json")

# (name, input vector); None stands for Clojure nil.
CASES = [
    ("empty_vector", []),
    ("single_nil", [None]),
    ("all_nils", [None, None, None]),
    ("single_empty_string", [""]),
    ("empty_strings", ["", "", ""]),
    ("empty_string_and_nil", ["", None]),
    ("spec_example", ["a", None, "x\"y"]),
    ("realistic_local_kubernetes", ["local-kubernetes", "dev", "dev--web"]),
    ("realistic_with_nil_namespace", ["local-kubernetes", None, "dev--web"]),
    ("plain_ascii", ["hello", "world"]),
    ("double_quote_only", ["\""]),
    ("double_quotes_around", ["\"quoted\""]),
    ("backslash_only", ["\\"]),
    ("two_backslashes", ["\\\\"]),
    ("backslash_then_quote", ["\\\""]),
    ("backslash_n_literal_not_newline", ["\\n"]),
    ("windows_path", ["C:\\Users\\dev\\file.txt"]),
    ("newline", ["line1\nline2"]),
    ("tab", ["a\tb"]),
    ("carriage_return", ["a\rb"]),
    ("crlf", ["a\r\nb"]),
    ("form_feed", ["a\fb"]),
    ("backspace", ["a\bb"]),
    ("all_escaped_chars", ["\"\\\n\t\r\f\b"]),
    ("nul_char", ["a\u0000b"]),
    ("control_u0001", ["\u0001"]),
    ("control_u001f", ["\u001f"]),
    ("delete_u007f", ["\u007f"]),
    ("escape_u001b", ["\u001b[31mred\u001b[0m"]),
    ("vertical_tab_u000b", ["a\u000bb"]),
    ("bell_u0007", ["\u0007"]),
    ("all_c0_controls_and_del", ["".join(chr(c) for c in range(0x20)) + "\u007f"]),
    ("c1_control_u0085", ["\u0085"]),
    ("latin_e_acute", ["é"]),
    ("cjk", ["日本"]),
    ("emoji", ["😀"]),
    ("emoji_zwj_sequence", ["👩\u200d💻"]),
    ("line_separator_u2028", ["a\u2028b"]),
    ("bom_ufeff", ["\ufeff"]),
    ("nbsp_u00a0", ["a\u00a0b"]),
    ("mixed_unicode", ["naïve café", "日本語", "Ωmega", "😀🎉"]),
    ("spaces", [" ", "  leading", "trailing  ", "in between"]),
    ("string_nil", ["nil"]),
    ("string_nil_and_real_nil", ["nil", None]),
    ("string_that_looks_like_empty_vector", ["[]"]),
    ("string_that_looks_like_rendering", ["[\"a\" nil]"]),
    ("brackets_and_commas", ["a,b", "[x]", "{:k 1}"]),
    ("clojure_reader_chars", ["#{}", "'quote", "`syntax", "~unquote", "@deref", "^meta", ":keyword", ";comment"]),
    ("unicode_escape_lookalike", ["\\u0041"]),
    ("long_string", ["x" * 300]),
    ("many_elements", [str(i) if i % 3 else None for i in range(20)]),
    ("mixed_everything", ["local-kubernetes", None, "", "a \"b\" \\c\n", "é日😀\u0001"]),
]

CLOJURE_PROGRAM = r"""
(defn unhex [^String h]
  (String. (byte-array (map (fn [[a b]] (unchecked-byte (Integer/parseInt (str a b) 16)))
                            (partition 2 h)))
           "UTF-8"))
(defn hex [^bytes bs] (apply str (map #(format "%02x" (bit-and % 0xff)) bs)))
(defn decode [v] (vec (map #(if (= % :nil) nil (unhex %)) v)))
(println (str "CLOJURE-VERSION " (clojure-version)))
(doseq [v (read-string (slurp *in*))]
  (let [printed (pr-str (decode v))
        bs (.getBytes ^String printed "UTF-8")
        digest (.digest (java.security.MessageDigest/getInstance "SHA-256") bs)]
    (println "ROW" (hex bs) (hex digest))))
"""


def encode_case(vec):
    parts = [":nil" if s is None else '"' + s.encode("utf-8").hex() + '"' for s in vec]
    return "[" + " ".join(parts) + "]"


def main():
    cmd = shlex.split(os.environ.get("CLOJURE_CMD", "clojure"))
    stdin = "[" + "\n".join(encode_case(v) for _, v in CASES) + "]"
    proc = subprocess.run(cmd + ["-e", CLOJURE_PROGRAM], input=stdin.encode("ascii"),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
        sys.exit(f"clojure failed with exit code {proc.returncode}")
    # `clojure -e` also echoes the value of each non-nil top-level form
    # (e.g. `#'user/unhex`), so only lines carrying our markers are used.
    lines = proc.stdout.decode("ascii").splitlines()
    versions = [l.split(" ", 1)[1] for l in lines if l.startswith("CLOJURE-VERSION ")]
    assert len(versions) == 1, lines
    version = versions[0]
    rows = [l.split(" ", 1)[1] for l in lines if l.startswith("ROW ")]
    assert len(rows) == len(CASES), (len(rows), len(CASES))

    names = set()
    cases = []
    for (name, vec), row in zip(CASES, rows):
        assert name not in names, f"duplicate case name {name}"
        names.add(name)
        printed_hex, clojure_sha = row.split(" ")
        printed_bytes = bytes.fromhex(printed_hex)
        sha = hashlib.sha256(printed_bytes).hexdigest()
        assert sha == clojure_sha, (name, sha, clojure_sha)
        cases.append({
            "name": name,
            "input": vec,
            "pr_str": printed_bytes.decode("utf-8"),
            "sha256": sha,
        })

    doc = {
        "generator": "crates/blue-identity/tests/gen_reference_vectors.py",
        "clojure_version": version,
        "note": "pr_str is the exact output of Clojure's (pr-str v) with default "
                "*print-readably*; sha256 is the SHA-256 of its UTF-8 bytes, computed by "
                "both java.security.MessageDigest and Python hashlib.",
        "cases": cases,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=2)
        f.write("\n")
    print(f"wrote {len(cases)} cases (Clojure {version}) to {OUT}")


if __name__ == "__main__":
    main()
