//! `local-configmap-operator`: the blue-kubernetes controller with the
//! `LocalConfigMap` package, until SIGTERM or SIGINT; `--help` lists the
//! flags, `crd` prints the CRD.

fn main() -> std::process::ExitCode {
    local_configmap_operator::cli::runner().run()
}
