//! Reading `template.yaml` in the template's tests: the file as YAML (short-form intrinsics as
//! YAML tags), and the few intrinsics they look through (`!Ref`, `!If`, `AWS::NoValue`).

use serde_yaml::Value;

/// The stack's `template.yaml`, parsed.
pub fn template() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
    let text = std::fs::read_to_string(path).expect("template.yaml is beside the workspace");
    serde_yaml::from_str(&text).expect("template.yaml is YAML")
}

/// The logical id or parameter a `!Ref X` (or `{Ref: X}`) names.
pub fn reference(value: &Value) -> Option<&str> {
    match value {
        Value::Tagged(tagged) if tagged.tag == "Ref" => tagged.value.as_str(),
        Value::Mapping(mapping) if mapping.len() == 1 => mapping.get("Ref")?.as_str(),
        _ => None,
    }
}

/// A `!If [condition, when true, when false]`: its three parts.
pub fn conditional(value: &Value) -> Option<(&str, &Value, &Value)> {
    let Value::Tagged(tagged) = value else {
        return None;
    };
    if tagged.tag != "If" {
        return None;
    }
    match tagged.value.as_sequence()?.as_slice() {
        [condition, when_true, when_false] => Some((condition.as_str()?, when_true, when_false)),
        _ => None,
    }
}

/// `AWS::NoValue`, the "leave it out" of a `!If` branch.
pub fn is_no_value(value: &Value) -> bool {
    reference(value) == Some("AWS::NoValue")
}
