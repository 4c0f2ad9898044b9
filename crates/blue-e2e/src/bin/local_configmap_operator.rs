//! The LocalConfigMap example operator, built as this package's binary so
//! the end-to-end tests run it (`CARGO_BIN_EXE_e2e-local-configmap-operator`).

fn main() -> std::process::ExitCode {
    local_configmap_operator::cli::runner().run()
}
