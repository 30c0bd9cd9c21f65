//! What `lineup local-aws` makes, and under which names. The resources are the ones the
//! functions' environments refer to in `template.yaml` (`SEATS_TABLE: !Ref SeatsTable`): every
//! table, queue and secret a function is handed, plus the dead-letter queue a queue's redrive
//! policy points at. Their names are the values `events/env.json` gives those variables, the file
//! `sam local invoke` passes the functions (`samconfig.toml`), so what is made is what an invoked
//! function looks for. Nothing here is a second list of resources or names to keep in step.

use std::collections::BTreeMap;

use serde_yaml::Value;

use super::queues;

/// `events/env.json`, as built: the names `sam local invoke` gives the functions.
pub const ENV_JSON: &str = include_str!("../../../events/env.json");

/// What kind of AWS resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A DynamoDB table.
    Table,
    /// An SQS queue.
    Queue,
    /// A Secrets Manager secret.
    Secret,
}

impl Kind {
    fn of(resource_type: &str) -> Option<Self> {
        match resource_type {
            "AWS::DynamoDB::Table" => Some(Self::Table),
            "AWS::SQS::Queue" => Some(Self::Queue),
            "AWS::SecretsManager::Secret" => Some(Self::Secret),
            _ => None,
        }
    }

    /// The word a report uses.
    pub fn word(self) -> &'static str {
        match self {
            Self::Table => "table",
            Self::Queue => "queue",
            Self::Secret => "secret",
        }
    }
}

/// One resource to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub kind: Kind,
    /// Its logical id in `template.yaml`.
    pub logical_id: String,
    /// Its name locally.
    pub name: String,
    /// The variable that hands it to the functions; `None` for a dead-letter queue, which only
    /// its queue refers to.
    pub variable: Option<String>,
}

/// A resource the functions refer to that is not made, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub logical_id: String,
    pub variable: String,
}

/// Every resource to make, in an order that can be made (a dead-letter queue before its queue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePlan {
    pub resources: Vec<Resource>,
    /// Resources whose variable env.json leaves empty (the origin check is off locally).
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{file} is not YAML/JSON this tool reads")]
    Unreadable {
        file: &'static str,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("env.json has no `Parameters` object (the variables sam local invoke passes every function)")]
    NoParameters,
    #[error("env.json gives no value for {variable}, which hands {logical_id} to the functions")]
    Unnamed {
        variable: String,
        logical_id: String,
    },
    #[error(
        "env.json gives {variable} the ARN {value:?}; give the secret's name instead (Secrets \
         Manager takes a name wherever an ARN is asked, and an ARN cannot be chosen)"
    )]
    SecretArn { variable: String, value: String },
    #[error("env.json's {variable} ({value:?}) does not end in a queue name")]
    QueueUrl { variable: String, value: String },
    #[error("{logical_id} is handed to the functions under two names: {first} and {second}")]
    TwoNames {
        logical_id: String,
        first: String,
        second: String,
    },
    #[error(transparent)]
    Queue(#[from] queues::QueueError),
}

impl ResourcePlan {
    /// The plan for the built-in `template.yaml` and `events/env.json`.
    pub fn built_in() -> Result<Self, PlanError> {
        Self::read(super::tables::TEMPLATE, ENV_JSON)
    }

    /// The plan for `template` and an env.json's text.
    pub fn read(template_text: &str, env_json: &str) -> Result<Self, PlanError> {
        let template: Value =
            serde_yaml::from_str(template_text).map_err(|source| PlanError::Unreadable {
                file: "template.yaml",
                source,
            })?;
        let env: Value =
            serde_yaml::from_str(env_json).map_err(|source| PlanError::Unreadable {
                file: "env.json",
                source,
            })?;
        let parameters = env
            .get("Parameters")
            .and_then(Value::as_mapping)
            .ok_or(PlanError::NoParameters)?;
        let resources = template
            .get("Resources")
            .and_then(Value::as_mapping)
            .cloned()
            .unwrap_or_default();
        let kind_of = |logical_id: &str| {
            resources
                .get(logical_id)
                .and_then(|resource| resource.get("Type"))
                .and_then(Value::as_str)
                .and_then(Kind::of)
        };

        // logical id -> (kind, variable), from every function's environment.
        let mut referred: BTreeMap<String, (Kind, String)> = BTreeMap::new();
        for resource in resources.values() {
            if resource.get("Type").and_then(Value::as_str) != Some("AWS::Serverless::Function") {
                continue;
            }
            let variables = resource
                .get("Properties")
                .and_then(|properties| properties.get("Environment"))
                .and_then(|environment| environment.get("Variables"))
                .and_then(Value::as_mapping);
            for (variable, value) in variables.into_iter().flatten() {
                let (Some(variable), Value::Tagged(tagged)) = (variable.as_str(), value) else {
                    continue;
                };
                let Some(logical_id) = tagged.value.as_str().filter(|_| tagged.tag == "Ref") else {
                    continue;
                };
                let Some(kind) = kind_of(logical_id) else {
                    continue;
                };
                match referred.get(logical_id) {
                    Some((_, first)) if first != variable => {
                        return Err(PlanError::TwoNames {
                            logical_id: logical_id.to_owned(),
                            first: first.clone(),
                            second: variable.to_owned(),
                        })
                    }
                    _ => {
                        referred.insert(logical_id.to_owned(), (kind, variable.to_owned()));
                    }
                }
            }
        }

        let mut plan = ResourcePlan {
            resources: Vec::new(),
            skipped: Vec::new(),
        };
        let mut by_kind: Vec<_> = referred.into_iter().collect();
        by_kind.sort_by(|(a_id, (a_kind, _)), (b_id, (b_kind, _))| {
            (a_kind, a_id).cmp(&(b_kind, b_id))
        });
        for (logical_id, (kind, variable)) in by_kind {
            let value = parameters
                .get(variable.as_str())
                .and_then(Value::as_str)
                .ok_or_else(|| PlanError::Unnamed {
                    variable: variable.clone(),
                    logical_id: logical_id.clone(),
                })?;
            if value.is_empty() {
                plan.skipped.push(Skipped {
                    logical_id,
                    variable,
                });
                continue;
            }
            let name = match kind {
                Kind::Table => value.to_owned(),
                Kind::Secret if value.starts_with("arn:") => {
                    return Err(PlanError::SecretArn {
                        variable,
                        value: value.to_owned(),
                    })
                }
                Kind::Secret => value.to_owned(),
                Kind::Queue => queue_name(value)
                    .ok_or_else(|| PlanError::QueueUrl {
                        variable: variable.clone(),
                        value: value.to_owned(),
                    })?
                    .to_owned(),
            };
            if kind == Kind::Queue {
                let declared = queues::declared(template_text, &logical_id)?;
                if let Some(dead_letter) = declared.dead_letter {
                    plan.resources.push(Resource {
                        kind: Kind::Queue,
                        name: queues::dead_letter_name(&name),
                        logical_id: dead_letter.logical_id,
                        variable: None,
                    });
                }
            }
            plan.resources.push(Resource {
                kind,
                logical_id,
                name,
                variable: Some(variable),
            });
        }
        Ok(plan)
    }

    /// The local name of `logical_id`, if it is made.
    pub fn name_of(&self, logical_id: &str) -> Option<&str> {
        self.resources
            .iter()
            .find(|resource| resource.logical_id == logical_id)
            .map(|resource| resource.name.as_str())
    }
}

/// The queue name at the end of a queue URL (`http://host:4566/000000000000/name.fifo`).
pub fn queue_name(url: &str) -> Option<&str> {
    url.rsplit('/').next().filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_plan_is_every_table_queue_and_secret_the_functions_are_handed() {
        let plan = ResourcePlan::built_in().unwrap();
        let made: Vec<(Kind, &str, &str)> = plan
            .resources
            .iter()
            .map(|r| (r.kind, r.logical_id.as_str(), r.name.as_str()))
            .collect();
        assert_eq!(
            made,
            [
                (Kind::Table, "EventsTable", "lineup-events"),
                (Kind::Table, "OrdersTable", "lineup-orders"),
                (Kind::Table, "OutboxTable", "lineup-outbox"),
                (Kind::Table, "SeatsTable", "lineup-seats"),
                (
                    Kind::Queue,
                    "RefundDeadLetterQueue",
                    "lineup-refunds-dead-letter.fifo"
                ),
                (Kind::Queue, "RefundQueue", "lineup-refunds.fifo"),
                (
                    Kind::Queue,
                    "TicketDeadLetterQueue",
                    "lineup-ticket-issued-dead-letter.fifo"
                ),
                (Kind::Queue, "TicketQueue", "lineup-ticket-issued.fifo"),
                (Kind::Secret, "SigningKeySecret", "lineup-signing-key"),
                (Kind::Secret, "StripeApiKeySecret", "lineup-stripe-api-key"),
                (
                    Kind::Secret,
                    "StripeWebhookSecret",
                    "lineup-stripe-webhook-secret"
                ),
                (Kind::Secret, "WebhookSecret", "lineup-webhook-secret"),
            ]
        );
        // env.json leaves the origin check off, and the functions on the local Redis's default
        // user, so none has a Redis password to fetch (docs/decisions/0026).
        let redis_password = |function: &str| Skipped {
            logical_id: format!("{function}RedisPassword"),
            variable: "LINEUP_REDIS_PASSWORD_SECRET_ARN".into(),
        };
        let origin = Skipped {
            logical_id: "OriginVerifySecret".into(),
            variable: "LINEUP_ORIGIN_SECRET_ARN".into(),
        };
        let functions = [
            "Join",
            "Poll",
            "Admit",
            "Hold",
            "Confirm",
            "Expire",
            "Status",
            "Availability",
        ];
        let mut expected: Vec<Skipped> = functions.into_iter().map(redis_password).collect();
        expected.push(origin);
        // The plan lists secrets by logical id.
        expected.sort_by(|a, b| a.logical_id.cmp(&b.logical_id));
        assert_eq!(plan.skipped, expected);
    }

    #[test]
    fn the_operator_commands_default_tables_are_env_jsons() {
        let plan = ResourcePlan::built_in().unwrap();
        use crate::endpoints::*;
        for (logical_id, default) in [
            ("SeatsTable", LOCAL_SEATS_TABLE),
            ("OrdersTable", LOCAL_ORDERS_TABLE),
            ("OutboxTable", LOCAL_OUTBOX_TABLE),
            ("EventsTable", LOCAL_EVENTS_TABLE),
        ] {
            assert_eq!(plan.name_of(logical_id), Some(default), "{logical_id}");
        }
    }

    #[test]
    fn an_env_json_that_misnames_a_resource_is_refused_with_the_variable_named() {
        let template = super::super::tables::TEMPLATE;
        let missing = ResourcePlan::read(template, r#"{"Parameters": {"SEATS_TABLE": "s"}}"#);
        assert!(
            matches!(&missing, Err(PlanError::Unnamed { variable, .. }) if variable != "SEATS_TABLE"),
            "{missing:?}"
        );
        let mut env: serde_json::Value = serde_json::from_str(ENV_JSON).unwrap();
        env["Parameters"]["LINEUP_SIGNING_KEY_SECRET_ARN"] =
            "arn:aws:secretsmanager:us-east-1:000000000000:secret:key-AbCdEf".into();
        assert!(matches!(
            ResourcePlan::read(template, &env.to_string()),
            Err(PlanError::SecretArn { .. })
        ));
        env["Parameters"]["LINEUP_SIGNING_KEY_SECRET_ARN"] = "my-key".into();
        env["Parameters"]["SEATS_TABLE"] = "my-seats".into();
        let renamed = ResourcePlan::read(template, &env.to_string()).unwrap();
        assert_eq!(renamed.name_of("SeatsTable"), Some("my-seats"));
        assert_eq!(renamed.name_of("SigningKeySecret"), Some("my-key"));
        assert!(ResourcePlan::read(template, "[1, 2").is_err());
        assert!(matches!(
            ResourcePlan::read(template, "{}"),
            Err(PlanError::NoParameters)
        ));
    }
}
