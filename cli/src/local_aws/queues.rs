//! The SQS queues, created from `template.yaml`'s own properties (FIFO, deduplication, throughput
//! limit, encryption, retention, the redrive to a dead-letter queue), and read back in the same
//! terms so an existing queue can be compared with the template instead of trusted.

use std::collections::BTreeMap;

use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_sqs::Client;
use serde_yaml::Value;

/// The ticket queue's logical id in the template.
pub const TICKET_QUEUE: &str = "TicketQueue";
/// The refund queue's logical id in `template.yaml` (the `refund` function's; `lineup dev` consumes it).
pub const REFUND_QUEUE: &str = "RefundQueue";

/// The template properties that are queue attributes under the same name. A property outside
/// this list (and the redrive policy, tags and name, handled apart) is refused, so a queue
/// setting added to the template is added here too rather than silently left out locally.
pub const ATTRIBUTES: [&str; 9] = [
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "SqsManagedSseEnabled",
    "MessageRetentionPeriod",
    "VisibilityTimeout",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
];

/// A queue as the template declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredQueue {
    /// Attribute name -> value, as SQS spells them (`"true"`, `"1209600"`).
    pub attributes: BTreeMap<String, String>,
    /// Where messages go after `max_receive_count` receives.
    pub dead_letter: Option<DeadLetter>,
}

/// A redrive policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The dead-letter queue's logical id.
    pub logical_id: String,
    pub max_receive_count: u64,
}

/// A queue that exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundQueue {
    pub url: String,
    pub attributes: BTreeMap<String, String>,
}

impl FoundQueue {
    /// Its ARN (what a redrive policy names).
    pub fn arn(&self) -> Option<&str> {
        self.attributes.get("QueueArn").map(String::as_str)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("template.yaml has no queue {0}")]
    Missing(String),
    #[error(
        "template.yaml: {logical_id} has property {property}, which `lineup local-aws` does not \
         make (cli/src/local_aws/queues.rs, ATTRIBUTES)"
    )]
    Property {
        logical_id: String,
        property: String,
    },
    #[error("template.yaml: {logical_id}'s RedrivePolicy is not `deadLetterTargetArn: !GetAtt <Queue>.Arn` and a maxReceiveCount")]
    Redrive { logical_id: String },
    #[error("{doing} queue {name}")]
    Request {
        doing: &'static str,
        name: String,
        #[source]
        source: Box<aws_sdk_sqs::Error>,
    },
    #[error("the emulator made queue {0} but gave no URL or ARN for it")]
    NoUrl(String),
}

/// The queue `logical_id` as `template` declares it.
pub fn declared(template: &str, logical_id: &str) -> Result<DeclaredQueue, QueueError> {
    let missing = || QueueError::Missing(logical_id.to_owned());
    let document: Value = serde_yaml::from_str(template).map_err(|_| missing())?;
    let properties = document
        .get("Resources")
        .and_then(|resources| resources.get(logical_id))
        .filter(|resource| resource.get("Type").and_then(Value::as_str) == Some("AWS::SQS::Queue"))
        .and_then(|resource| resource.get("Properties"))
        .and_then(Value::as_mapping)
        .ok_or_else(missing)?;
    let mut queue = DeclaredQueue {
        attributes: BTreeMap::new(),
        dead_letter: None,
    };
    for (property, value) in properties {
        let property = property.as_str().unwrap_or_default();
        match property {
            "RedrivePolicy" => queue.dead_letter = Some(redrive(logical_id, value)?),
            "Tags" | "QueueName" => {}
            _ if ATTRIBUTES.contains(&property) => {
                let text = match value {
                    Value::Bool(flag) => flag.to_string(),
                    Value::Number(number) => number.to_string(),
                    Value::String(text) => text.clone(),
                    _ => {
                        return Err(QueueError::Property {
                            logical_id: logical_id.to_owned(),
                            property: property.to_owned(),
                        })
                    }
                };
                queue.attributes.insert(property.to_owned(), text);
            }
            _ => {
                return Err(QueueError::Property {
                    logical_id: logical_id.to_owned(),
                    property: property.to_owned(),
                })
            }
        }
    }
    Ok(queue)
}

fn redrive(logical_id: &str, value: &Value) -> Result<DeadLetter, QueueError> {
    let refused = || QueueError::Redrive {
        logical_id: logical_id.to_owned(),
    };
    let target = match value.get("deadLetterTargetArn") {
        Some(Value::Tagged(tagged)) if tagged.tag == "GetAtt" => tagged
            .value
            .as_str()
            .and_then(|target| target.strip_suffix(".Arn"))
            .ok_or_else(refused)?,
        _ => return Err(refused()),
    };
    let max_receive_count = value
        .get("maxReceiveCount")
        .and_then(Value::as_u64)
        .ok_or_else(refused)?;
    Ok(DeadLetter {
        logical_id: target.to_owned(),
        max_receive_count,
    })
}

/// The local name of the dead-letter queue of queue `name` (a FIFO queue's is FIFO too).
pub fn dead_letter_name(name: &str) -> String {
    match name.strip_suffix(".fifo") {
        Some(stem) => format!("{stem}-dead-letter.fifo"),
        None => format!("{name}-dead-letter"),
    }
}

/// The queue `name` with its attributes; `None` when there is none.
pub async fn find(client: &Client, name: &str) -> Result<Option<FoundQueue>, QueueError> {
    let url = match client.get_queue_url().queue_name(name).send().await {
        Ok(answer) => answer
            .queue_url
            .ok_or_else(|| QueueError::NoUrl(name.to_owned()))?,
        Err(error) => {
            return match aws_sdk_sqs::Error::from(error) {
                aws_sdk_sqs::Error::QueueDoesNotExist(_) => Ok(None),
                error => Err(failed("finding", name, error)),
            }
        }
    };
    let attributes = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .map_err(|error| failed("reading", name, error.into()))?
        .attributes
        .unwrap_or_default()
        .into_iter()
        .map(|(attribute, value)| (attribute.as_str().to_owned(), value))
        .collect();
    Ok(Some(FoundQueue { url, attributes }))
}

/// Creates queue `name` as `declared`, its redrive pointing at `dead_letter_arn`.
pub async fn create(
    client: &Client,
    name: &str,
    declared: &DeclaredQueue,
    dead_letter_arn: Option<&str>,
) -> Result<FoundQueue, QueueError> {
    let mut request = client.create_queue().queue_name(name);
    for (attribute, value) in &declared.attributes {
        request = request.attributes(QueueAttributeName::from(attribute.as_str()), value);
    }
    if let (Some(dead_letter), Some(arn)) = (&declared.dead_letter, dead_letter_arn) {
        request = request.attributes(
            QueueAttributeName::RedrivePolicy,
            redrive_policy(arn, dead_letter.max_receive_count),
        );
    }
    request
        .send()
        .await
        .map_err(|error| failed("creating", name, error.into()))?;
    find(client, name)
        .await?
        .ok_or_else(|| QueueError::NoUrl(name.to_owned()))
}

/// How `found` differs from `declared` (with its redrive to `dead_letter_arn`), in words. An
/// attribute the emulator does not answer at all is one it does not keep (it was asked for at
/// creation): not a difference, or every second run on such an emulator would be refused.
pub fn differences(
    found: &FoundQueue,
    declared: &DeclaredQueue,
    dead_letter_arn: Option<&str>,
) -> Vec<String> {
    let mut differences: Vec<String> = declared
        .attributes
        .iter()
        .filter_map(|(attribute, value)| {
            let found = found.attributes.get(attribute)?;
            (found != value)
                .then(|| format!("{attribute} is {found} where the template has {value}"))
        })
        .collect();
    let found_redrive = found
        .attributes
        .get("RedrivePolicy")
        .and_then(|policy| serde_json::from_str::<serde_json::Value>(policy).ok())
        .map(|policy| {
            (
                policy["deadLetterTargetArn"].as_str().map(str::to_owned),
                // SQS has answered it as a number and as a string.
                policy["maxReceiveCount"].as_u64().or_else(|| {
                    policy["maxReceiveCount"]
                        .as_str()
                        .and_then(|count| count.parse().ok())
                }),
            )
        });
    let declared_redrive = declared.dead_letter.as_ref().map(|dead_letter| {
        (
            dead_letter_arn.map(str::to_owned),
            Some(dead_letter.max_receive_count),
        )
    });
    if found_redrive != declared_redrive {
        differences.push(format!(
            "its redrive policy is {found_redrive:?} where the template has {declared_redrive:?}"
        ));
    }
    differences
}

/// Deletes queue `name`; `false` when there was none.
pub async fn delete(client: &Client, name: &str) -> Result<bool, QueueError> {
    let Some(found) = find(client, name).await? else {
        return Ok(false);
    };
    client
        .delete_queue()
        .queue_url(&found.url)
        .send()
        .await
        .map_err(|error| failed("deleting", name, error.into()))?;
    Ok(true)
}

fn redrive_policy(dead_letter_arn: &str, max_receive_count: u64) -> String {
    serde_json::json!({
        "deadLetterTargetArn": dead_letter_arn,
        "maxReceiveCount": max_receive_count,
    })
    .to_string()
}

fn failed(doing: &'static str, name: &str, source: aws_sdk_sqs::Error) -> QueueError {
    QueueError::Request {
        doing,
        name: name.to_owned(),
        source: Box::new(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local_aws::tables::TEMPLATE;

    #[test]
    fn the_ticket_queue_is_read_as_the_template_declares_it() {
        let queue = declared(TEMPLATE, "TicketQueue").unwrap();
        assert_eq!(queue.attributes["FifoQueue"], "true");
        assert_eq!(queue.attributes["DeduplicationScope"], "messageGroup");
        assert_eq!(queue.attributes["FifoThroughputLimit"], "perMessageGroupId");
        assert_eq!(
            queue.dead_letter,
            Some(DeadLetter {
                logical_id: "TicketDeadLetterQueue".into(),
                max_receive_count: 5
            })
        );
        let dead_letter = declared(TEMPLATE, "TicketDeadLetterQueue").unwrap();
        assert_eq!(dead_letter.attributes["MessageRetentionPeriod"], "1209600");
        assert_eq!(dead_letter.dead_letter, None);
        assert!(matches!(
            declared(TEMPLATE, "SeatsTable"),
            Err(QueueError::Missing(_))
        ));
        assert_eq!(
            dead_letter_name("lineup-ticket-issued.fifo"),
            "lineup-ticket-issued-dead-letter.fifo"
        );
    }

    #[test]
    fn a_queue_property_this_tool_does_not_make_is_refused_not_dropped() {
        let template = "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      KmsMasterKeyId: alias/x\n";
        assert!(matches!(
            declared(template, "Q"),
            Err(QueueError::Property { property, .. }) if property == "KmsMasterKeyId"
        ));
    }

    #[test]
    fn differences_name_each_attribute_and_the_redrive() {
        let declared = declared(TEMPLATE, "TicketQueue").unwrap();
        let mut attributes = declared.attributes.clone();
        attributes.insert(
            "RedrivePolicy".into(),
            redrive_policy(
                "arn:dlq",
                declared.dead_letter.as_ref().unwrap().max_receive_count,
            ),
        );
        let mut found = FoundQueue {
            url: "u".into(),
            attributes,
        };
        assert!(differences(&found, &declared, Some("arn:dlq")).is_empty());
        assert_eq!(differences(&found, &declared, Some("arn:other")).len(), 1);
        found
            .attributes
            .insert("DeduplicationScope".into(), "queue".into());
        found.attributes.remove("RedrivePolicy");
        let said = differences(&found, &declared, Some("arn:dlq"));
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("DeduplicationScope is queue"), "{said:?}");
        // An attribute the emulator does not keep at all is not held against it.
        found
            .attributes
            .insert("DeduplicationScope".into(), "messageGroup".into());
        found.attributes.remove("SqsManagedSseEnabled");
        assert_eq!(differences(&found, &declared, Some("arn:dlq")).len(), 1);
    }
}
