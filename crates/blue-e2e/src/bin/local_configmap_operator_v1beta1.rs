//! The LocalConfigMap example operator's next release (stored at
//! `v1beta1`, `v1alpha1` served through its conversion webhook), built as
//! this package's binary so the upgrade checks run it
//! (`CARGO_BIN_EXE_e2e-local-configmap-operator-v1beta1`).

fn main() -> std::process::ExitCode {
    local_configmap_operator::cli::v1beta1_runner().run()
}
