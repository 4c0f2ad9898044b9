//! `postgres-operator`: the blue-kubernetes controller with the
//! `PostgresServer` and `PostgresDatabase` packages, until SIGTERM or
//! SIGINT; `--help` lists the flags, `crd` prints the CRDs.

fn main() -> std::process::ExitCode {
    postgres_operator::cli::runner().run()
}
