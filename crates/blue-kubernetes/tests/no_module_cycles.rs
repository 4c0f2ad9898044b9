//! The crate's modules import each other without a cycle: a module file
//! that imports, through any chain, a module that imports it back cannot
//! be read, changed or tested on its own.
//!
//! The edges are the `crate::`, `super::` and `self::` paths of the
//! crate's non-test code (in `use` declarations and inline), each
//! resolved to the module file that defines the name: a path through a
//! facade's re-export (`pub use x::Name`) is followed to the file that
//! defines `Name`, so importing through a facade hides no cycle. A
//! parent's bare paths to its own children (`mod x; use x::Name;`) are
//! the parent's declaration of them, not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

struct Crate {
    /// Each module's path (without `crate`) and its non-test source.
    modules: BTreeMap<Module, String>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut modules = BTreeMap::new();
        collect(src, src, &mut modules);
        Crate { modules }
    }

    /// The names a module brings in with `use`, each with its full path.
    fn imports(&self, module: &Module) -> BTreeMap<String, Module> {
        let mut names = BTreeMap::new();
        for tree in use_trees(&self.modules[module]) {
            for path in expand(&tree.1) {
                let Some(last) = path.last() else { continue };
                let (name, path) = match last.split_once(" as ") {
                    Some((original, alias)) => {
                        let mut path = path.clone();
                        *path.last_mut().unwrap() = original.trim().to_string();
                        (alias.trim().to_string(), path)
                    }
                    None => (last.clone(), path.clone()),
                };
                if let Some(absolute) = absolute(module, &path) {
                    names.insert(name, absolute);
                } else if self.is_child(module, &path[0]) {
                    // `use child::Name`: a path relative to this module.
                    let mut absolute = module.clone();
                    absolute.extend(path);
                    names.insert(name, absolute);
                }
            }
        }
        names
    }

    fn is_child(&self, module: &Module, name: &str) -> bool {
        let mut child = module.clone();
        child.push(name.to_string());
        self.modules.contains_key(&child)
    }

    /// The module file that defines what `path` names, following
    /// re-exports.
    fn defining(&self, path: &[String], depth: usize) -> Option<Module> {
        let split = (0..=path.len())
            .rev()
            .find(|&n| self.modules.contains_key(&path[..n]))?;
        let module = path[..split].to_vec();
        if depth < 8 && split < path.len() {
            if let Some(target) = self.imports(&module).get(&path[split]) {
                let mut target = target.clone();
                target.extend_from_slice(&path[split + 1..]);
                if let Some(defining) = self.defining(&target, depth + 1) {
                    return Some(defining);
                }
            }
        }
        Some(module)
    }

    fn edges(&self) -> BTreeMap<Module, BTreeSet<Module>> {
        let inline =
            regex::Regex::new(r"\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
        let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (module, source) in &self.modules {
            let mut paths: Vec<Module> = Vec::new();
            // A re-export (`pub use`) hands a name on: who imports it through
            // the facade gets an edge to the defining file instead.
            for tree in use_trees(source).into_iter().filter(|t| !t.0) {
                for path in expand(&tree.1) {
                    let mut path = path.clone();
                    if let Some(last) = path.last_mut() {
                        *last = last.split(" as ").next().unwrap().trim().to_string();
                    }
                    paths.extend(absolute(module, &path));
                }
            }
            let code = strip_use_declarations(source);
            for found in inline.find_iter(&code) {
                let path: Module = found.as_str().split("::").map(str::to_string).collect();
                paths.extend(absolute(module, &path));
            }
            for path in paths {
                if let Some(target) = self.defining(&path, 0) {
                    if &target != module && !target.is_empty() {
                        edges.entry(module.clone()).or_default().insert(target);
                    }
                }
            }
        }
        edges
    }
}

/// Every module file under `dir`, without test modules and test code.
fn collect(root: &Path, dir: &Path, modules: &mut BTreeMap<Module, String>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().unwrap() != "tests" {
                collect(root, &path, modules);
            }
            continue;
        }
        if path.extension().is_none_or(|ext| ext != "rs") || path.file_name().unwrap() == "tests.rs"
        {
            continue;
        }
        let relative = path.strip_prefix(root).unwrap().with_extension("");
        let mut module: Module = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
            module.pop();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        modules.insert(module, without_tests(&text));
    }
}

/// The source before its `#[cfg(test)]` module, without comments.
fn without_tests(text: &str) -> String {
    let mut kept = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        kept.push_str(line.split(" // ").next().unwrap());
        kept.push('\n');
    }
    kept
}

/// The trees of the `use` declarations, as written (`crate::{a, b::C}`),
/// each with whether it is a re-export.
fn use_trees(source: &str) -> Vec<(bool, String)> {
    let declaration = regex::Regex::new(r"(?m)^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);").unwrap();
    declaration
        .captures_iter(source)
        .map(|c| {
            (
                c.get(1).is_some(),
                c[2].split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .collect()
}

fn strip_use_declarations(source: &str) -> String {
    let declaration = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+[^;]+;").unwrap();
    declaration.replace_all(source, "").into_owned()
}

/// `a::{b, c::{D, E}}` as the paths `a::b`, `a::c::D`, `a::c::E`.
fn expand(tree: &str) -> Vec<Module> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split("::").map(|s| s.trim().to_string()).collect()];
    };
    let prefix: Module = tree[..open]
        .trim_end_matches("::")
        .split("::")
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().to_string())
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut paths = Vec::new();
    for part in parts.into_iter().filter(|p| !p.trim().is_empty()) {
        for rest in expand(part) {
            let mut path = prefix.clone();
            if rest != ["self"] {
                path.extend(rest);
            }
            paths.push(path);
        }
    }
    paths
}

/// `path` as written in `module`, from the crate's root; `None` for a
/// path that does not start at `crate`, `super` or `self`.
fn absolute(module: &Module, path: &[String]) -> Option<Module> {
    let mut base = module.clone();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super" | "self") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().filter(|s| s.as_str() != "*").cloned());
    Some(base)
}

/// Every cycle of the graph, one per strongly connected component.
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for start in edges.keys() {
        if seen.contains(start) {
            continue;
        }
        // A path back to `start` from one of its targets is a cycle.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut visited = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    seen.extend(path.iter().cloned());
                    found.push(path.clone());
                    stack.clear();
                    break;
                }
                if visited.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    found
}

fn name(module: &Module) -> String {
    if module.is_empty() {
        "crate".into()
    } else {
        format!("crate::{}", module.join("::"))
    }
}

/// Modules allowed on a cycle: none. The crate has no import cycle, and
/// no module may join one (a module listed here that leaves every cycle
/// must leave the list too).
const KNOWN: &[&str] = &[];

/// The modules that reach themselves through the edges.
fn on_cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> BTreeSet<Module> {
    let mut on = BTreeSet::new();
    for start in edges.keys() {
        let mut stack: Vec<&Module> = edges[start].iter().collect();
        let mut visited = BTreeSet::new();
        while let Some(at) = stack.pop() {
            if at == start {
                on.insert(start.clone());
                break;
            }
            if visited.insert(at) {
                stack.extend(edges.get(at).into_iter().flatten());
            }
        }
    }
    on
}

#[test]
fn the_controller_crate_has_no_new_module_cycle() {
    let krate = Crate::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        krate.modules.len() > 50,
        "the scan found the crate's modules"
    );
    let edges = krate.edges();
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 100,
        "the scan found the crate's imports"
    );
    let on: BTreeSet<String> = on_cycles(&edges).iter().map(name).collect();
    let known: BTreeSet<String> = KNOWN.iter().map(|m| m.to_string()).collect();
    let shown: Vec<String> = cycles(&edges)
        .iter()
        .map(|cycle| {
            let mut names: Vec<String> = cycle.iter().map(name).collect();
            names.push(name(&cycle[0]));
            names.join(" -> ")
        })
        .collect();
    let joined: Vec<&String> = on.difference(&known).collect();
    assert!(
        joined.is_empty(),
        "modules joined a cycle: {joined:?}\ncycles:\n{}",
        shown.join("\n")
    );
    let left: Vec<&String> = known.difference(&on).collect();
    assert!(
        left.is_empty(),
        "modules left every cycle, take them off KNOWN: {left:?}"
    );
}

#[test]
fn the_scan_sees_a_cycle_through_a_facade() {
    let mut modules = BTreeMap::new();
    let module = |path: &str| path.split("::").map(str::to_string).collect::<Module>();
    modules.insert(vec![], "pub use a::A;\n".to_string());
    modules.insert(
        module("a"),
        "pub struct A;\nfn f() { crate::b::g() }\n".to_string(),
    );
    modules.insert(module("b"), "use crate::A;\npub fn g() {}\n".to_string());
    let edges = Crate { modules }.edges();
    assert_eq!(cycles(&edges), vec![vec![module("a"), module("b")]]);
}
