//! The list of Lambda functions exists once for the Rust code, in
//! `lineup::wiring::functions::FUNCTIONS`. The workspace, the SAM build's Makefile and the scripts
//! take the functions from their folders (`functions/<name>`); the template declares each. Both
//! are checked against the list here, so a function added or renamed in one place and not
//! another fails this test, not a deploy.

use std::collections::BTreeSet;
use std::path::Path;

use lineup::wiring::functions::{Trigger, FUNCTIONS};

fn read(relative: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn names() -> BTreeSet<String> {
    FUNCTIONS.iter().map(|f| f.name.to_owned()).collect()
}

/// The function folders: `functions/<name>` with a `Cargo.toml`. The workspace (`functions/*`),
/// the SAM Makefile and the scripts all take the functions from these folders.
fn folders() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    std::fs::read_dir(root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The Makefile's rule: a logical id's name, kebab case without "Function".
fn name_of(logical_id: &str) -> String {
    let mut name = String::new();
    let stem = logical_id
        .strip_suffix("Function")
        .expect("ends in Function");
    for (i, c) in stem.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('-');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

#[test]
fn there_is_one_crate_per_function_and_each_calls_its_wiring() {
    assert_eq!(folders(), names());
    assert!(
        read("Cargo.toml").contains("\"functions/*\""),
        "the workspace takes every folder of functions/"
    );
    for function in FUNCTIONS {
        let main = read(&format!("functions/{}/src/main.rs", function.name));
        let call = format!(
            "lineup::wiring::lambda::{}()",
            function.name.replace('-', "_")
        );
        assert!(
            main.contains(&call),
            "functions/{}: calls {call}",
            function.name
        );
    }
}

#[test]
fn the_build_and_the_scripts_find_each_function_from_its_folder_and_logical_id() {
    for function in FUNCTIONS {
        assert_eq!(name_of(function.logical_id), function.name, "{function:?}");
    }
    let makefile = read("functions/Makefile");
    assert!(makefile.contains("$(wildcard functions/*/Cargo.toml)"));
    assert!(makefile.contains("build-%Function:"));
    for script in ["scripts/sam-build.sh", "scripts/lambda-local.sh"] {
        assert!(
            read(script).contains("for crate in functions/*/Cargo.toml"),
            "{script} lists the functions from their folders"
        );
    }
}

#[test]
fn the_template_deploys_exactly_these_functions_with_their_triggers() {
    let template = read("template.yaml");
    let lines: Vec<&str> = template.lines().collect();
    let deployed: BTreeSet<String> = lines
        .windows(2)
        .filter(|pair| pair[1].trim() == "Type: AWS::Serverless::Function")
        .map(|pair| pair[0].trim().trim_end_matches(':').to_owned())
        .collect();
    let expected: BTreeSet<String> = FUNCTIONS.iter().map(|f| f.logical_id.to_owned()).collect();
    assert_eq!(deployed, expected);
    for function in FUNCTIONS {
        // The resource's block: from its logical id to the next resource at the same indent.
        let start = lines
            .iter()
            .position(|line| *line == format!("  {}:", function.logical_id))
            .expect("the resource");
        let block: String = lines[start + 1..]
            .iter()
            .take_while(|line| line.is_empty() || line.starts_with("   "))
            .map(|line| format!("{line}\n"))
            .collect();
        let trigger = match function.trigger {
            Trigger::Http => "Type: HttpApi",
            Trigger::Schedule => "Type: Schedule",
            Trigger::Stream => "Type: DynamoDB",
            Trigger::Queue => "Type: SQS",
        };
        assert!(
            block.contains(trigger),
            "{}: expected an event source `{trigger}`",
            function.logical_id
        );
    }
}
