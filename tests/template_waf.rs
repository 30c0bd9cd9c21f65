//! The managed challenge at the edge (docs/decisions/0028-a-proof-of-work-at-join.md, "The
//! managed challenge at the edge"), checked on `template.yaml` itself: the `EdgeChallenge`
//! parameter is off by default; when on, the stack's web ACL gets one rule with AWS WAF's
//! Challenge action, under a condition tied to the parameter, on the join only (POST, the join's
//! path: never the cached public GETs, the poll, holds, orders or the webhooks), at a priority no
//! other rule has; and the ACL accepts tokens for the service's own domain when it has one.
//!
//! No WAF is needed: the template is read as YAML (short-form intrinsics as YAML tags) and the
//! rule's path regex is run here by a small matcher of the regex subset the template uses.
//! `a_widened_challenge_is_caught` widens a copy of the rule in each known way and expects the
//! check to say so, so the check cannot quietly stop seeing one.

use lineup_tests::template::{conditional, is_no_value, reference, template};
use serde_yaml::Value;

const RULE: &str = "join-edge-challenge";
const CONDITION: &str = "EdgeChallengeEnabled";

/// The join: what the challenge must cover (as a browser sends it, and as WAF's transformations
/// leave it: a trailing slash, upper case).
const JOIN_PATHS: &[&str] = &["/events/e1/queue", "/events/e1/queue/", "/EVENTS/E1/QUEUE"];

/// Everything else the distribution serves: what the challenge must never cover. The public
/// routes are cached GETs a fetch cannot answer a challenge on, and the webhooks come from a
/// payment provider's servers, which run no browser.
const OTHER_PATHS: &[&str] = &[
    "/events/x/status",
    "/events/e1/draw",
    "/events/e1/draw/ab",
    "/events/e1/layout",
    "/events/e1/layout/3",
    "/events/e1/seats",
    "/events/e1/queue/q1",
    "/events/e1/queue/q1/",
    "/events/e1/queueing",
    "/events/e1/holds",
    "/events/e1/holds/h1",
    "/orders/o1",
    "/orders/o1/payment",
    "/orders/o1/confirm",
    "/webhooks/stripe",
    "/queue",
    "/events/queue",
    "/x/events/e1/queue",
];

fn web_acl(template: &Value) -> &Value {
    &template["Resources"]["WebAcl"]["Properties"]
}

/// The ACL's rules, each with the condition it is under (a `!If [C, rule, AWS::NoValue]`), if any.
fn rules(acl: &Value) -> Vec<(Option<&str>, &Value)> {
    acl["Rules"]
        .as_sequence()
        .expect("WebAcl has Rules")
        .iter()
        .map(|rule| match conditional(rule) {
            Some((condition, when_true, when_false)) => {
                assert!(
                    is_no_value(when_false),
                    "a conditional rule's other branch is AWS::NoValue"
                );
                (Some(condition), when_true)
            }
            None => (None, rule),
        })
        .collect()
}

/// Every condition a condition is built from (`!And`, `!Or`, `!Not`, `!Condition`), itself
/// included, and every parameter those compare (`!Ref` inside `!Equals`), by name.
fn condition_parts<'t>(
    template: &'t Value,
    name: &'t str,
    conditions: &mut Vec<&'t str>,
    refs: &mut Vec<(&'t str, &'t Value)>,
) {
    conditions.push(name);
    fn walk<'t>(
        template: &'t Value,
        value: &'t Value,
        conditions: &mut Vec<&'t str>,
        refs: &mut Vec<(&'t str, &'t Value)>,
    ) {
        match value {
            Value::Tagged(tagged) if tagged.tag == "Condition" => {
                let name = tagged.value.as_str().expect("!Condition names one");
                condition_parts(template, name, conditions, refs);
            }
            Value::Tagged(tagged) if tagged.tag == "Equals" => {
                let pair = tagged.value.as_sequence().expect("!Equals takes a pair");
                if let [left, right] = pair.as_slice() {
                    if let Some(name) = reference(left) {
                        refs.push((name, right));
                    }
                }
            }
            Value::Tagged(tagged) => walk(template, &tagged.value, conditions, refs),
            Value::Sequence(items) => {
                for item in items {
                    walk(template, item, conditions, refs);
                }
            }
            _ => {}
        }
    }
    let definition = &template["Conditions"][name];
    assert!(!definition.is_null(), "condition {name} is defined");
    walk(template, definition, conditions, refs);
}

/// What is wrong with the challenge rule's scope, priority and action; empty when nothing is.
fn challenge_problems(template: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let acl = web_acl(template);
    let all = rules(acl);
    let found: Vec<_> = all
        .iter()
        .filter(|(_, rule)| rule["Name"].as_str() == Some(RULE))
        .collect();
    let [(condition, rule)] = found.as_slice() else {
        return vec![format!("{} rules named {RULE}, not one", found.len())];
    };

    // Under the parameter's condition, which needs the stack's own ACL.
    if *condition != Some(CONDITION) {
        problems.push(format!("under condition {condition:?}, not {CONDITION}"));
    } else {
        // Exactly this: no !Or or !Not that would turn it on another way.
        let expected: Value = serde_yaml::from_str(
            "!And [!Condition CreateWebAcl, !Equals [!Ref EdgeChallenge, challenge]]",
        )
        .unwrap();
        if template["Conditions"][CONDITION] != expected {
            problems.push(format!(
                "{CONDITION} is {:?}, not CreateWebAcl and EdgeChallenge = challenge",
                template["Conditions"][CONDITION]
            ));
        }
    }

    // The Challenge action, nothing else, with the parameter's immunity time.
    let action = rule["Action"].as_mapping();
    if action.map(|a| a.len()) != Some(1) || rule["Action"].get("Challenge").is_none() {
        problems.push(format!("action is {:?}, not Challenge", rule["Action"]));
    }
    if rule.get("OverrideAction").is_some() {
        problems.push("has an OverrideAction (a rule group's), not a rule's action".to_owned());
    }
    let immunity = &rule["ChallengeConfig"]["ImmunityTimeProperty"]["ImmunityTime"];
    if reference(immunity) != Some("EdgeChallengeImmunitySeconds") {
        problems.push(format!(
            "immunity time is {immunity:?}, not EdgeChallengeImmunitySeconds"
        ));
    }

    // The join only: POST and the join's path, both required, nothing that could widen them.
    let statements = rule["Statement"]["AndStatement"]["Statements"]
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rule["Statement"].as_mapping().map(|m| m.len()) != Some(1) || statements.len() != 2 {
        problems
            .push("the statement is not an AndStatement of exactly a method and a path".to_owned());
    }
    let method = statements
        .iter()
        .find_map(|s| s.get("ByteMatchStatement"))
        .filter(|m| m["FieldToMatch"].get("Method").is_some());
    match method {
        Some(m)
            if m["PositionalConstraint"].as_str() == Some("EXACTLY")
                && m["SearchString"].as_str() == Some("POST") => {}
        _ => problems.push("not scoped to exactly POST".to_owned()),
    }
    let path = statements
        .iter()
        .find_map(|s| s.get("RegexMatchStatement"))
        .filter(|m| m["FieldToMatch"].get("UriPath").is_some());
    match path.and_then(|m| Some((m["RegexString"].as_str()?, m))) {
        None => problems.push("not scoped to a path regex on the URI path".to_owned()),
        Some((regex, statement)) => {
            let lowercased = statement["TextTransformations"]
                .as_sequence()
                .is_some_and(|ts| ts.iter().any(|t| t["Type"].as_str() == Some("LOWERCASE")));
            let seen = |p: &str| {
                if lowercased {
                    p.to_lowercase()
                } else {
                    p.to_owned()
                }
            };
            for join in JOIN_PATHS {
                if !regex_matches(regex, &seen(join)) {
                    problems.push(format!("{regex} does not match the join {join}"));
                }
            }
            for other in OTHER_PATHS {
                if regex_matches(regex, &seen(other)) {
                    problems.push(format!("{regex} matches {other}, which is not the join"));
                }
            }
        }
    }

    // A priority of its own: WAF refuses an ACL with two rules at one priority.
    let priority = rule["Priority"].as_u64();
    let others: Vec<u64> = all
        .iter()
        .filter(|(_, r)| r["Name"].as_str() != Some(RULE))
        .filter_map(|(_, r)| r["Priority"].as_u64())
        .collect();
    match priority {
        None => problems.push("no numeric priority".to_owned()),
        Some(p) if others.contains(&p) => problems.push(format!("priority {p} is another rule's")),
        Some(_) => {}
    }
    problems
}

#[test]
fn the_edge_challenge_is_off_by_default() {
    let template = template();
    let parameter = &template["Parameters"]["EdgeChallenge"];
    assert_eq!(parameter["Default"].as_str(), Some("none"));
    let allowed: Vec<&str> = parameter["AllowedValues"]
        .as_sequence()
        .expect("EdgeChallenge has AllowedValues")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(allowed, ["none", "challenge"]);

    // AWS WAF refuses an immunity time under 300 s for the Challenge action.
    let immunity = &template["Parameters"]["EdgeChallengeImmunitySeconds"];
    assert_eq!(immunity["Type"].as_str(), Some("Number"));
    assert_eq!(immunity["Default"].as_u64(), Some(300));
    assert!(immunity["MinValue"].as_u64().is_some_and(|v| v >= 300));
    assert!(immunity["MaxValue"].as_u64().is_some_and(|v| v <= 259_200));
}

#[test]
fn the_edge_challenge_is_on_the_join_only() {
    let problems = challenge_problems(&template());
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_rule_of_the_web_acl_has_a_priority_of_its_own() {
    let template = template();
    let mut priorities: Vec<(u64, &str)> = rules(web_acl(&template))
        .into_iter()
        .map(|(_, rule)| {
            let name = rule["Name"].as_str().expect("a rule has a name");
            let priority = rule["Priority"].as_u64().expect("a literal priority");
            (priority, name)
        })
        .collect();
    priorities.sort();
    for pair in priorities.windows(2) {
        assert_ne!(pair[0].0, pair[1].0, "{} and {}", pair[0].1, pair[1].1);
    }
}

#[test]
fn tokens_for_the_services_own_domain_are_accepted() {
    let template = template();
    let domains = &web_acl(&template)["TokenDomains"];
    let (condition, when_true, when_false) =
        conditional(domains).expect("TokenDomains is an !If on the viewer domain");
    assert!(is_no_value(when_false), "no domain: AWS WAF's default");
    let listed: Vec<Option<&str>> = when_true
        .as_sequence()
        .expect("a list of domains")
        .iter()
        .map(reference)
        .collect();
    assert_eq!(listed, [Some("DomainName")]);
    let (mut conditions, mut refs) = (Vec::new(), Vec::new());
    condition_parts(&template, condition, &mut conditions, &mut refs);
    assert!(
        refs.iter().any(|(name, _)| *name == "DomainName"),
        "{condition} is about DomainName"
    );
}

/// The rule of a copy of the template, to widen.
fn rule_mut(template: &mut Value) -> &mut Value {
    template["Resources"]["WebAcl"]["Properties"]["Rules"]
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .find_map(|rule| match rule {
            Value::Tagged(tagged) if tagged.tag == "If" => {
                let branches = tagged.value.as_sequence_mut().unwrap();
                (branches[1]["Name"].as_str() == Some(RULE)).then(|| &mut branches[1])
            }
            _ => None,
        })
        .expect("the rule is in the template")
}

/// A way to widen the rule, by name.
type Widening = (&'static str, fn(&mut Value));

#[test]
fn a_widened_challenge_is_caught() {
    let base = template();
    let widenings: &[Widening] = &[
        ("every event route", |rule| {
            rule["Statement"]["AndStatement"]["Statements"][1]["RegexMatchStatement"]
                ["RegexString"] = "^/events/[^/]+/.*$".into();
        }),
        ("the poll too", |rule| {
            rule["Statement"]["AndStatement"]["Statements"][1]["RegexMatchStatement"]
                ["RegexString"] = "^/events/[^/]+/queue(/[^/]+)?/?$".into();
        }),
        ("no anchor", |rule| {
            rule["Statement"]["AndStatement"]["Statements"][1]["RegexMatchStatement"]
                ["RegexString"] = "/queue".into();
        }),
        ("the webhooks too", |rule| {
            rule["Statement"]["AndStatement"]["Statements"][1]["RegexMatchStatement"]
                ["RegexString"] = "^(/events/[^/]+/queue|/webhooks/stripe)/?$".into();
        }),
        ("any method", |rule| {
            let statements = rule["Statement"]["AndStatement"]["Statements"]
                .as_sequence_mut()
                .unwrap();
            statements.remove(0);
        }),
        ("GET", |rule| {
            rule["Statement"]["AndStatement"]["Statements"][0]["ByteMatchStatement"]
                ["SearchString"] = "GET".into();
        }),
        ("an Or", |rule| {
            let and = rule["Statement"]["AndStatement"].clone();
            rule["Statement"] = serde_yaml::from_str("{}").unwrap();
            rule["Statement"]["OrStatement"] = and;
        }),
        ("a CAPTCHA", |rule| {
            rule["Action"] = serde_yaml::from_str("{ Captcha: {} }").unwrap();
        }),
        ("a Block", |rule| {
            rule["Action"] = serde_yaml::from_str("{ Block: {} }").unwrap();
        }),
        ("another rule's priority", |rule| {
            rule["Priority"] = 0.into();
        }),
        ("a fixed immunity time", |rule| {
            rule["ChallengeConfig"]["ImmunityTimeProperty"]["ImmunityTime"] = 300.into();
        }),
    ];
    for (name, widen) in widenings {
        let mut copy = base.clone();
        widen(rule_mut(&mut copy));
        assert!(
            !challenge_problems(&copy).is_empty(),
            "widened to {name}, and not caught"
        );
    }
    // Not on by default: the rule under the condition of another parameter is caught too.
    let mut copy = base.clone();
    let rules = copy["Resources"]["WebAcl"]["Properties"]["Rules"]
        .as_sequence_mut()
        .unwrap();
    for rule in rules.iter_mut() {
        if let Value::Tagged(tagged) = rule {
            let branches = tagged.value.as_sequence_mut().unwrap();
            if branches[1]["Name"].as_str() == Some(RULE) {
                branches[0] = "CreateWebAcl".into();
            }
        }
    }
    assert!(
        !challenge_problems(&copy).is_empty(),
        "always on, not caught"
    );
    // Nor a condition that turns it on some other way.
    let mut copy = base.clone();
    copy["Conditions"][CONDITION] = serde_yaml::from_str(
        "!And [!Condition CreateWebAcl, !Not [!Equals [!Ref EdgeChallenge, challenge]]]",
    )
    .unwrap();
    assert!(
        !challenge_problems(&copy).is_empty(),
        "on when off, not caught"
    );
}

// ---------------------------------------------------------------- the regex subset
// Enough of RE2 (AWS WAF's regex flavour) for the template's path rules: `^`, `$`, literals,
// `\` escapes, classes (`[^/]`, ranges), groups with `|`, and `?`, `*`, `+`. Anything else
// panics, so a rule written with more is noticed here rather than matched wrongly.

#[derive(Debug, Clone)]
enum Node {
    Start,
    End,
    Char(char),
    Class {
        negated: bool,
        items: Vec<(char, char)>,
    },
    Group(Vec<Vec<Node>>),
    Repeat {
        node: Box<Node>,
        min: usize,
        max: Option<usize>,
    },
}

fn parse_alternatives(chars: &[char], at: &mut usize) -> Vec<Vec<Node>> {
    let mut alternatives = vec![Vec::new()];
    while *at < chars.len() {
        let c = chars[*at];
        *at += 1;
        let node = match c {
            ')' => {
                *at -= 1;
                break;
            }
            '|' => {
                alternatives.push(Vec::new());
                continue;
            }
            '^' => Node::Start,
            '$' => Node::End,
            '(' => {
                let inner = parse_alternatives(chars, at);
                assert_eq!(chars.get(*at), Some(&')'), "an unclosed group");
                *at += 1;
                Node::Group(inner)
            }
            '[' => {
                let negated = chars.get(*at) == Some(&'^');
                if negated {
                    *at += 1;
                }
                let mut items = Vec::new();
                while chars.get(*at) != Some(&']') {
                    let mut low = *chars.get(*at).expect("an unclosed class");
                    if low == '\\' {
                        *at += 1;
                        low = chars[*at];
                    }
                    *at += 1;
                    let mut high = low;
                    if chars.get(*at) == Some(&'-') && chars.get(*at + 1) != Some(&']') {
                        high = chars[*at + 1];
                        *at += 2;
                    }
                    items.push((low, high));
                }
                *at += 1;
                Node::Class { negated, items }
            }
            '\\' => {
                let escaped = chars[*at];
                *at += 1;
                assert!(
                    !escaped.is_ascii_alphanumeric(),
                    "escape \\{escaped} is not in the subset"
                );
                Node::Char(escaped)
            }
            '.' => Node::Class {
                negated: true,
                items: vec![('\n', '\n')],
            },
            '{' | '}' | '*' | '+' | '?' => panic!("{c} at {} is not in the subset", *at - 1),
            c => Node::Char(c),
        };
        let (min, max) = match chars.get(*at) {
            Some('?') => (0, Some(1)),
            Some('*') => (0, None),
            Some('+') => (1, None),
            _ => {
                alternatives.last_mut().unwrap().push(node);
                continue;
            }
        };
        *at += 1;
        alternatives.last_mut().unwrap().push(Node::Repeat {
            node: Box::new(node),
            min,
            max,
        });
    }
    alternatives
}

/// RE2's search: anywhere in `text` unless anchored.
fn regex_matches(regex: &str, text: &str) -> bool {
    let pattern: Vec<char> = regex.chars().collect();
    let mut at = 0;
    let ast = vec![Node::Group(parse_alternatives(&pattern, &mut at))];
    assert_eq!(at, pattern.len(), "an unopened ) in {regex}");
    let text: Vec<char> = text.chars().collect();
    (0..=text.len()).any(|start| match_seq(&ast, &text, start, &mut |_| true))
}

fn match_seq(nodes: &[Node], text: &[char], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let Some((first, rest)) = nodes.split_first() else {
        return k(pos);
    };
    match_node(first, text, pos, &mut |next| {
        match_seq(rest, text, next, &mut *k)
    })
}

fn match_node(node: &Node, text: &[char], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match node {
        Node::Start => pos == 0 && k(pos),
        Node::End => pos == text.len() && k(pos),
        Node::Char(c) => text.get(pos) == Some(c) && k(pos + 1),
        Node::Class { negated, items } => {
            text.get(pos)
                .is_some_and(|t| items.iter().any(|(low, high)| low <= t && t <= high) != *negated)
                && k(pos + 1)
        }
        Node::Group(alternatives) => alternatives
            .iter()
            .any(|alternative| match_seq(alternative, text, pos, &mut *k)),
        Node::Repeat { node, min, max } => repeat(node, (*min, *max), 0, text, pos, k),
    }
}

/// Greedy: one more of `node` first, then what follows.
fn repeat(
    node: &Node,
    (min, max): (usize, Option<usize>),
    count: usize,
    text: &[char],
    pos: usize,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    let more = max.is_none_or(|max| count < max);
    if more
        && match_node(node, text, pos, &mut |next| {
            (next != pos || count < min) && repeat(node, (min, max), count + 1, text, next, &mut *k)
        })
    {
        return true;
    }
    count >= min && k(pos)
}

#[test]
fn the_regex_subset_matches_as_re2_does() {
    let join = "^/events/[^/]+/queue/?$";
    assert!(regex_matches(join, "/events/e/queue"));
    assert!(regex_matches(join, "/events/e/queue/"));
    assert!(!regex_matches(join, "/events//queue"));
    assert!(!regex_matches(join, "/events/e/queue/q"));
    assert!(!regex_matches(join, "/x/events/e/queue"));
    assert!(
        regex_matches("/queue", "/events/e/queue/q"),
        "unanchored: anywhere"
    );
    let group = "^(/events/[^/]+/holds(/[^/]+)?|/orders/[^/]+(/payment)?)/?$";
    assert!(regex_matches(group, "/orders/o/payment"));
    assert!(regex_matches(group, "/events/e/holds/h/"));
    assert!(!regex_matches(group, "/orders/o/confirm"));
    assert!(regex_matches("^a[b-d]*e$", "abcde"));
    assert!(!regex_matches("^a[b-d]*e$", "abxe"));
    assert!(regex_matches("^a.+$", "abc"));
}
