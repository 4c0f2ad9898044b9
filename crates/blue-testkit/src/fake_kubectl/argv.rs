//! Parsing the kubectl command lines the transport produces.

use std::collections::HashMap;

/// Global flags the transport puts before the command.
const GLOBAL: [&str; 3] = ["--kubeconfig", "--context", "--request-timeout"];
/// Command flags that take a value.
const VALUED: [&str; 13] = [
    "-n",
    "--namespace",
    "-o",
    "--output",
    "-f",
    "--filename",
    "-p",
    "--patch",
    "--type",
    "--raw",
    "--chunk-size",
    "-l",
    "--selector",
];

/// One supported kubectl command.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// `get TYPE (-n NS | --all-namespaces) [-l SELECTOR] -o json`; no
    /// namespace: the context's, or none for a cluster-scoped type.
    List {
        resource: String,
        namespace: Option<String>,
        all_namespaces: bool,
        selector: Option<String>,
    },
    /// `get TYPE NAME [-n NS] [--ignore-not-found] -o json`
    Get {
        resource: String,
        name: String,
        namespace: Option<String>,
        ignore_not_found: bool,
    },
    /// `replace --raw PATH -f FILE`
    Replace { path: String, file: String },
    /// `get --raw PATH`
    RawGet { path: String },
    /// `create --raw PATH -f FILE`
    RawCreate { path: String, file: String },
    /// `patch TYPE NAME [-n NS] --type=merge -p JSON -o json`
    Patch {
        resource: String,
        name: String,
        namespace: Option<String>,
        patch: String,
    },
}

/// Why a command line was not understood.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// The verb is not one kubectl (as faked) knows.
    UnknownCommand(String),
    /// A known verb with arguments outside the supported shapes.
    Unsupported(&'static str),
}

/// The arguments after `argv[0]` and the global flags.
pub(crate) fn command_args(argv: &[String]) -> &[String] {
    let mut rest = argv.get(1..).unwrap_or_default();
    while let Some(first) = rest.first() {
        let global = GLOBAL.iter().find(|g| first.starts_with(*g));
        match global {
            Some(g) if first.len() == g.len() => rest = rest.get(2..).unwrap_or_default(),
            Some(g) if first.as_bytes().get(g.len()) == Some(&b'=') => rest = &rest[1..],
            _ => break,
        }
    }
    rest
}

#[derive(Default)]
struct Parts {
    positional: Vec<String>,
    flags: HashMap<String, String>,
    ignore_not_found: bool,
    all_namespaces: bool,
}

fn canonical(flag: &str) -> &str {
    match flag {
        "-n" => "--namespace",
        "-o" => "--output",
        "-f" => "--filename",
        "-p" => "--patch",
        "-l" => "--selector",
        other => other,
    }
}

fn split(args: &[String]) -> Result<Parts, Rejected> {
    let mut parts = Parts::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--ignore-not-found" || arg == "--ignore-not-found=true" {
            parts.ignore_not_found = true;
        } else if ["-A", "--all-namespaces", "--all-namespaces=true"].contains(&arg.as_str()) {
            parts.all_namespaces = true;
        } else if let Some((flag, value)) = arg.split_once('=').filter(|_| arg.starts_with('-')) {
            if !VALUED.contains(&flag) {
                return Err(Rejected::Unsupported("unknown flag"));
            }
            parts.flags.insert(canonical(flag).into(), value.into());
        } else if VALUED.contains(&arg.as_str()) {
            let value = iter
                .next()
                .ok_or(Rejected::Unsupported("flag needs a value"))?;
            parts.flags.insert(canonical(arg).into(), value.clone());
        } else if arg.starts_with('-') {
            return Err(Rejected::Unsupported("unknown flag"));
        } else {
            parts.positional.push(arg.clone());
        }
    }
    Ok(parts)
}

impl Parts {
    fn flag(&self, name: &str) -> Option<String> {
        self.flags.get(name).cloned()
    }

    fn namespace(&self) -> Option<String> {
        self.flag("--namespace")
    }

    fn require_json(&self) -> Result<(), Rejected> {
        match self.flag("--output").as_deref() {
            Some("json") => Ok(()),
            _ => Err(Rejected::Unsupported("only -o json is supported")),
        }
    }
}

/// Parses the command part of a command line (see [`command_args`]).
pub(crate) fn parse(args: &[String]) -> Result<Command, Rejected> {
    let parts = split(args)?;
    let verb = parts.positional.first().cloned().unwrap_or_default();
    let positional: Vec<String> = parts.positional.iter().skip(1).cloned().collect();
    match (verb.as_str(), positional.as_slice()) {
        ("get", []) => match parts.flag("--raw") {
            Some(path) => Ok(Command::RawGet { path }),
            None => Err(Rejected::Unsupported("get needs a type or --raw PATH")),
        },
        ("create", []) => match (parts.flag("--raw"), parts.flag("--filename")) {
            (Some(path), Some(file)) => Ok(Command::RawCreate { path, file }),
            _ => Err(Rejected::Unsupported("create needs --raw PATH -f FILE")),
        },
        ("get", [resource]) => {
            parts.require_json()?;
            Ok(Command::List {
                resource: resource.clone(),
                namespace: parts.namespace(),
                all_namespaces: parts.all_namespaces,
                selector: parts.flag("--selector"),
            })
        }
        ("get", [_, _]) if parts.all_namespaces => Err(Rejected::Unsupported(
            "a resource cannot be retrieved by name across all namespaces",
        )),
        ("get", [resource, name]) => {
            parts.require_json()?;
            Ok(Command::Get {
                resource: resource.clone(),
                name: name.clone(),
                namespace: parts.namespace(),
                ignore_not_found: parts.ignore_not_found,
            })
        }
        ("replace", []) => match (parts.flag("--raw"), parts.flag("--filename")) {
            (Some(path), Some(file)) => Ok(Command::Replace { path, file }),
            _ => Err(Rejected::Unsupported("replace needs --raw PATH -f FILE")),
        },
        ("patch", [resource, name]) => {
            parts.require_json()?;
            if parts.flag("--type").as_deref() != Some("merge") {
                return Err(Rejected::Unsupported("only --type=merge patches"));
            }
            let patch = parts
                .flag("--patch")
                .ok_or(Rejected::Unsupported("patch needs -p JSON"))?;
            Ok(Command::Patch {
                resource: resource.clone(),
                name: name.clone(),
                namespace: parts.namespace(),
                patch,
            })
        }
        ("get" | "create" | "replace" | "patch", _) => {
            Err(Rejected::Unsupported("unexpected arguments"))
        }
        _ => Err(Rejected::UnknownCommand(verb)),
    }
}

/// The parts of `/apis/G/V/namespaces/NS/PLURAL/NAME/status`, or of
/// `/apis/G/V/PLURAL/NAME/status` (cluster-scoped: namespace `""`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct StatusPath {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) namespace: String,
    pub(crate) plural: String,
    pub(crate) name: String,
}

pub(crate) fn parse_status_path(path: &str) -> Option<StatusPath> {
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    match segments.as_slice() {
        ["apis", group, version, "namespaces", namespace, plural, name, "status"] => {
            Some(StatusPath {
                group: (*group).into(),
                version: (*version).into(),
                namespace: (*namespace).into(),
                plural: (*plural).into(),
                name: (*name).into(),
            })
        }
        ["apis", group, version, plural, name, "status"] if *plural != "namespaces" => {
            Some(StatusPath {
                group: (*group).into(),
                version: (*version).into(),
                namespace: String::new(),
                plural: (*plural).into(),
                name: (*name).into(),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn global_flags_are_skipped_in_both_spellings() {
        let argv = strings(&[
            "kubectl",
            "--kubeconfig",
            "/k",
            "--context=dev",
            "--request-timeout=30s",
            "get",
            "x",
        ]);
        assert_eq!(command_args(&argv), ["get", "x"]);
    }

    #[test]
    fn list_and_get_are_told_apart_by_the_name() {
        let list = parse(&strings(&[
            "get",
            "w.example.com",
            "-n",
            "ns",
            "-o",
            "json",
        ]));
        assert_eq!(
            list,
            Ok(Command::List {
                resource: "w.example.com".into(),
                namespace: Some("ns".into()),
                all_namespaces: false,
                selector: None,
            })
        );
        let everywhere = parse(&strings(&["get", "w.example.com", "-A", "-o", "json"]));
        assert!(matches!(
            everywhere,
            Ok(Command::List {
                namespace: None,
                all_namespaces: true,
                ..
            })
        ));
        let get = parse(&strings(&[
            "get",
            "w.example.com",
            "a",
            "--namespace=ns",
            "--ignore-not-found",
            "-o",
            "json",
        ]));
        assert!(matches!(
            get,
            Ok(Command::Get {
                ignore_not_found: true,
                ..
            })
        ));
    }

    #[test]
    fn unknown_verbs_and_shapes_are_rejected() {
        assert_eq!(
            parse(&strings(&["apply", "-f", "x"])),
            Err(Rejected::UnknownCommand("apply".into()))
        );
        assert!(matches!(
            parse(&strings(&["get", "w.example.com", "-o", "yaml"])),
            Err(Rejected::Unsupported(_))
        ));
    }

    #[test]
    fn status_paths_are_parsed() {
        let p = parse_status_path("/apis/example.com/v1/namespaces/ns/widgets/a/status").unwrap();
        assert_eq!(
            (p.group.as_str(), p.plural.as_str(), p.name.as_str()),
            ("example.com", "widgets", "a")
        );
        assert!(parse_status_path("/apis/example.com/v1/widgets/a").is_none());
        let cluster = parse_status_path("/apis/example.com/v1/racks/r/status").unwrap();
        assert_eq!(
            (cluster.namespace.as_str(), cluster.name.as_str()),
            ("", "r")
        );
    }
}
