//! The list of Lambda functions exists once, in `lineup::wiring::functions::FUNCTIONS`; every
//! other place that names them (the workspace, the SAM build's Makefile, the scripts that build
//! and run them, the template) is checked against it here, so a function added or renamed in
//! one place and not another fails this test, not a deploy.

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

/// The words of the first line starting with `prefix`, after it, up to `end`.
fn listed(text: &str, prefix: &str, end: &str) -> BTreeSet<String> {
    let line = text
        .lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?}"));
    line[prefix.len()..]
        .split(end)
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_workspace_has_one_crate_per_function() {
    let members: BTreeSet<String> = read("Cargo.toml")
        .lines()
        .filter_map(|line| line.trim().strip_prefix("\"functions/"))
        .map(|rest| rest.trim_end_matches("\",").to_owned())
        .collect();
    assert_eq!(members, names());
    for function in FUNCTIONS {
        let main = read(&format!("functions/{}/src/main.rs", function.name));
        let call = format!("lineup::wiring::lambda::{}()", function.name.replace('-', "_"));
        assert!(main.contains(&call), "functions/{}: calls {call}", function.name);
    }
}

#[test]
fn the_sam_makefile_builds_every_function_under_its_logical_id() {
    let makefile = read("functions/Makefile");
    assert_eq!(listed(&makefile, "FUNCTIONS := ", "\n"), names());
    for function in FUNCTIONS {
        let target = format!("build-{}:\n\t$(call artifact,{})", function.logical_id, function.name);
        assert!(makefile.contains(&target), "functions/Makefile: {target}");
    }
}

#[test]
fn the_scripts_build_and_run_every_function() {
    for script in ["scripts/sam-build.sh", "scripts/lambda-local.sh"] {
        assert_eq!(
            listed(&read(script), "FUNCTIONS=(", ")"),
            names(),
            "{script}'s FUNCTIONS"
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
        };
        assert!(
            block.contains(trigger),
            "{}: expected an event source `{trigger}`",
            function.logical_id
        );
    }
}
