//! The PostgreSQL example operator, built as this package's binary so the
//! end-to-end tests run it (`CARGO_BIN_EXE_e2e-postgres-operator`).

fn main() -> std::process::ExitCode {
    postgres_operator::cli::runner().run()
}
