//! The product crate's layers, checked from its sources: `domain` imports nothing from the other
//! layers, no module imports back up the stack beyond the few named here, and there is no import
//! circle among the crate's modules, directly or through others.
//!
//! A module is a file; an import is any `crate::` path outside comments and tests (a `use`, or a
//! path written in full). `cargo test -p lineup --test module_graph -- --nocapture` prints the
//! graph's size and every arrow that runs up.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers from the bottom up: a module may import from its own layer and those below.
const LAYERS: [&str; 4] = ["domain", "application", "adapters", "wiring"];

/// Imports that run from a lower layer up, each with its reason. At most three.
const ALLOWED_UPWARD: [(&str, &str); 0] = [];

struct Module {
    path: String,
    imports: BTreeSet<String>,
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// `application/ports/queue.rs` → `application::ports::queue`; `adapters/redis/mod.rs` →
/// `adapters::redis`; `lib.rs` → the root, "".
fn module_path(relative: &Path) -> String {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without its comments and its `#[cfg(test)]` part.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::a::b::...` path, with `use crate::{a::b, c}` groups expanded one level.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident = rest[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue;
        }
        let mut prefixes = vec![Vec::new()];
        if let Some(group) = rest.strip_prefix('{') {
            let end = matching_brace(group);
            prefixes = split_top_level(&group[..end])
                .into_iter()
                .map(segments)
                .collect();
        } else {
            prefixes[0] = segments(rest);
        }
        paths.extend(prefixes.into_iter().filter(|path| !path.is_empty()));
    }
    paths
}

fn segments(text: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut rest = text.trim_start();
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        segments.push(rest[..len].to_owned());
        match rest[len..].strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    segments
}

fn matching_brace(text: &str) -> usize {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    text.len()
}

fn split_top_level(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
}

fn modules() -> Vec<Module> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let known: BTreeSet<String> = files
        .iter()
        .map(|file| module_path(file.strip_prefix(&root).unwrap()))
        .collect();
    files
        .iter()
        .map(|file| {
            let path = module_path(file.strip_prefix(&root).unwrap());
            let text = std::fs::read_to_string(file).unwrap();
            let imports = crate_paths(&code(&text))
                .into_iter()
                .filter_map(|segments| {
                    // The longest module the path names (the rest is an item in it).
                    (1..=segments.len())
                        .rev()
                        .map(|n| segments[..n].join("::"))
                        .find(|candidate| known.contains(candidate))
                })
                .filter(|target| *target != path && !target.is_empty())
                .collect();
            Module { path, imports }
        })
        .collect()
}

fn layer(module: &str) -> usize {
    let top = module.split("::").next().unwrap_or_default();
    LAYERS
        .iter()
        .position(|layer| *layer == top)
        .unwrap_or_else(|| panic!("{module} is in no layer"))
}

#[test]
fn the_domain_imports_nothing_from_the_other_layers() {
    let outside: Vec<String> = modules()
        .iter()
        .filter(|module| !module.path.is_empty() && layer(&module.path) == 0)
        .flat_map(|module| {
            module
                .imports
                .iter()
                .filter(|target| layer(target) != 0)
                .map(move |target| format!("{} -> {target}", module.path))
        })
        .collect();
    assert!(outside.is_empty(), "the domain imports {outside:#?}");
}

#[test]
fn imports_run_down_the_layers_but_for_the_named_few() {
    let modules = modules();
    let upward: BTreeSet<(String, String)> = modules
        .iter()
        .filter(|module| !module.path.is_empty())
        .flat_map(|module| {
            module
                .imports
                .iter()
                .filter(|target| layer(target) > layer(&module.path))
                .map(|target| (module.path.clone(), target.clone()))
        })
        .collect();
    let arrows: usize = modules.iter().map(|module| module.imports.len()).sum();
    println!("{} modules, {arrows} import arrows", modules.len());
    for (from, to) in &upward {
        println!("up: {from} -> {to}");
    }
    let allowed: BTreeSet<(String, String)> = ALLOWED_UPWARD
        .iter()
        .map(|(from, to)| (from.to_string(), to.to_string()))
        .collect();
    assert!(allowed.len() <= 3, "at most three upward imports");
    assert_eq!(upward, allowed, "imports running up the layers");
}

#[test]
fn no_import_circle() {
    let modules = modules();
    let graph: BTreeMap<&str, &BTreeSet<String>> = modules
        .iter()
        .map(|module| (module.path.as_str(), &module.imports))
        .collect();
    // Depth-first search, reporting the first circle found as a path.
    fn visit<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, &'a BTreeSet<String>>,
        done: &mut BTreeSet<&'a str>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|on| *on == node) {
            let mut circle: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if !done.insert(node) {
            return None;
        }
        stack.push(node);
        for next in graph.get(node).into_iter().flat_map(|set| set.iter()) {
            if let Some((key, _)) = graph.get_key_value(next.as_str()) {
                if let Some(circle) = visit(key, graph, done, stack) {
                    return Some(circle);
                }
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    let mut circles = Vec::new();
    for node in graph.keys() {
        let mut stack = Vec::new();
        if let Some(circle) = visit(node, &graph, &mut done, &mut stack) {
            circles.push(circle.join(" -> "));
        }
    }
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}
