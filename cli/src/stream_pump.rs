//! The local event source mappings: read a table's DynamoDB stream and hand each batch to its
//! function's handler in the shape Lambda delivers (`{"Records": [...]}`): the outbox table's to
//! `outbox-stream`, the seats table's to `availability`. Like the real mapping, a batch with
//! failures is handed over again from its lowest failed record.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodbstreams::types::{AttributeValue, Record, ShardIteratorType};
use aws_sdk_dynamodbstreams::Client as StreamsClient;
use lineup::application::error::LineupError;
use lineup::application::ports::availability::AvailabilityBoard;
use lineup::application::ports::outbox::TicketPublisher;
use lineup::application::stream_batch::StreamBatchResponse;
use serde_json::{json, Map, Value};

type StreamsError<E> = aws_sdk_dynamodbstreams::error::SdkError<E>;

#[derive(Debug, thiserror::Error)]
pub enum PumpError {
    #[error("could not describe table {table}")]
    DescribeTable {
        table: String,
        #[source]
        source: Box<
            aws_sdk_dynamodb::error::SdkError<
                aws_sdk_dynamodb::operation::describe_table::DescribeTableError,
            >,
        >,
    },
    #[error("table {0} has no stream")]
    NoStream(String),
    #[error("could not describe the stream")]
    DescribeStream(
        #[source]
        Box<
            StreamsError<aws_sdk_dynamodbstreams::operation::describe_stream::DescribeStreamError>,
        >,
    ),
    #[error("could not get a shard iterator")]
    ShardIterator(
        #[source]
        Box<
            StreamsError<
                aws_sdk_dynamodbstreams::operation::get_shard_iterator::GetShardIteratorError,
            >,
        >,
    ),
    #[error("could not read stream records")]
    GetRecords(
        #[source]
        Box<StreamsError<aws_sdk_dynamodbstreams::operation::get_records::GetRecordsError>>,
    ),
    #[error("a stream record has no {0}")]
    Incomplete(&'static str),
    #[error("a stream record holds an attribute type neither an outbox nor a seat item has")]
    UnexpectedAttribute,
}

/// The stream of `table` (it must have one).
pub async fn stream_arn(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<String, PumpError> {
    let described = dynamodb
        .describe_table()
        .table_name(table)
        .send()
        .await
        .map_err(|source| PumpError::DescribeTable {
            table: table.to_owned(),
            source: Box::new(source),
        })?;
    described
        .table()
        .and_then(|table| table.latest_stream_arn())
        .map(str::to_owned)
        .ok_or_else(|| PumpError::NoStream(table.to_owned()))
}

async fn shard_ids(streams: &StreamsClient, arn: &str) -> Result<Vec<String>, PumpError> {
    let description = streams
        .describe_stream()
        .stream_arn(arn)
        .send()
        .await
        .map_err(|source| PumpError::DescribeStream(Box::new(source)))?
        .stream_description
        .ok_or(PumpError::Incomplete("stream description"))?;
    Ok(description
        .shards()
        .iter()
        .filter_map(|shard| shard.shard_id().map(str::to_owned))
        .collect())
}

/// A shard iterator from `position`.
async fn iterator(
    streams: &StreamsClient,
    arn: &str,
    shard: &str,
    position: &Position,
) -> Result<Option<String>, PumpError> {
    let request = streams.get_shard_iterator().stream_arn(arn).shard_id(shard);
    let request = match position {
        Position::Start => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
        Position::After(sequence) => request
            .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
            .sequence_number(sequence),
        Position::At(sequence) => request
            .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
            .sequence_number(sequence),
        Position::Latest => request.shard_iterator_type(ShardIteratorType::Latest),
        // The iterator the last page gave is used as it is.
        Position::Following { iterator, .. } => return Ok(Some(iterator.clone())),
    };
    Ok(request
        .send()
        .await
        .map_err(|source| PumpError::ShardIterator(Box::new(source)))?
        .shard_iterator)
}

/// Every record the stream holds so far, in order, each shaped as Lambda delivers it (tests feed
/// these to the handler).
pub async fn read_all(streams: &StreamsClient, arn: &str) -> Result<Vec<Value>, PumpError> {
    let mut records = Vec::new();
    for shard in shard_ids(streams, arn).await? {
        let mut next = iterator(streams, arn, &shard, &Position::Start).await?;
        while let Some(current) = next {
            let page = streams
                .get_records()
                .shard_iterator(current)
                .send()
                .await
                .map_err(|source| PumpError::GetRecords(Box::new(source)))?;
            if page.records().is_empty() {
                break;
            }
            for record in page.records() {
                records.push(lambda_record(record, arn)?);
            }
            next = page.next_shard_iterator;
        }
    }
    Ok(records)
}

/// A function a stream feeds.
#[async_trait]
pub trait StreamHandler: Send + Sync {
    /// Its name, for the logs.
    fn name(&self) -> &'static str;
    async fn handle(
        &self,
        invocation: lambda_runtime::LambdaEvent<Value>,
    ) -> Result<StreamBatchResponse, LineupError>;
}

/// `outbox-stream`: publishes outbox events to the ticket queue.
pub struct OutboxStream(pub std::sync::Arc<dyn TicketPublisher>);

#[async_trait]
impl StreamHandler for OutboxStream {
    fn name(&self) -> &'static str {
        "outbox-stream"
    }
    async fn handle(
        &self,
        invocation: lambda_runtime::LambdaEvent<Value>,
    ) -> Result<StreamBatchResponse, LineupError> {
        lineup::application::outbox_stream::handle(self.0.as_ref(), invocation).await
    }
}

/// `availability`: projects seat changes into the seat map.
pub struct AvailabilityStream(pub std::sync::Arc<dyn AvailabilityBoard>);

#[async_trait]
impl StreamHandler for AvailabilityStream {
    fn name(&self) -> &'static str {
        "availability"
    }
    async fn handle(
        &self,
        invocation: lambda_runtime::LambdaEvent<Value>,
    ) -> Result<StreamBatchResponse, LineupError> {
        lineup::application::availability::handle(self.0.as_ref(), invocation).await
    }
}

/// Follows the stream from its start, handing each new batch to the handler.
///
/// After a batch delivered whole (or an empty read) it reads on with the iterator the page gave,
/// as a mapping does; after a failed one it asks for an iterator at the failed record, so the
/// batch is re-read from there exactly. The shard list is asked for every
/// [`SHARDS_REFRESH`]: each request costs the serialised emulator time the API needs.
pub struct StreamPump {
    pub streams: StreamsClient,
    pub stream_arn: String,
    pub handler: std::sync::Arc<dyn StreamHandler>,
    pub poll_every: Duration,
    pub start_at: StartAt,
}

/// How long a pump trusts the shard list it read.
const SHARDS_REFRESH: Duration = Duration::from_secs(10);

/// Where a pump starts reading, as an event source mapping's `StartingPosition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// Every record the stream holds (`TRIM_HORIZON`): the outbox, which must lose nothing.
    Oldest,
    /// Only records written after the pump starts (`LATEST`): the seat map, whose seeding's
    /// records (tens of thousands at a stadium) the seeding has already projected.
    Latest,
}

/// Where to read a shard from next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Position {
    /// Nothing handed over yet: from the oldest record.
    Start,
    /// Everything up to and including this sequence number was delivered.
    After(String),
    /// A batch failed from this record on: hand it over again from here.
    At(String),
    /// Nothing handed over yet: from the records written after the pump started.
    Latest,
    /// Reading on: the iterator the last page gave (a `LATEST` iterator asked for again would
    /// skip what was written meanwhile), and the last sequence number delivered, to start again
    /// from should the iterator be refused.
    Following {
        iterator: String,
        delivered: Option<String>,
    },
}

impl Position {
    /// Where to read from when the iterator of `Following` is no longer valid (expired, or
    /// past the stream's trim): after the last record delivered. With nothing delivered yet
    /// there is nothing better than trying the iterator again.
    fn without_iterator(&self) -> Self {
        match self {
            Self::Following {
                delivered: Some(sequence),
                ..
            } => Self::After(sequence.clone()),
            other => other.clone(),
        }
    }

    /// The last sequence number delivered, if any.
    fn delivered(&self) -> Option<String> {
        match self {
            Self::After(sequence) => Some(sequence.clone()),
            Self::Following { delivered, .. } => delivered.clone(),
            _ => None,
        }
    }
}

impl StreamPump {
    /// Runs until the task is dropped. Errors reading the stream are logged and retried.
    pub async fn run(self) {
        let mut positions: HashMap<String, Position> = HashMap::new();
        let mut shards = None;
        let mut interval = tokio::time::interval(self.poll_every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            if let Err(error) = self.pass(&mut shards, &mut positions).await {
                // The shard list too is read again after a failure.
                shards = None;
                tracing::warn!(function = self.handler.name(), error = %error, source = ?std::error::Error::source(&error), "stream pump: reading the stream failed; retrying");
            }
        }
    }

    /// One pass, with the shard list read again when it is older than [`SHARDS_REFRESH`].
    async fn pass(
        &self,
        shards: &mut Option<(Vec<String>, tokio::time::Instant)>,
        positions: &mut HashMap<String, Position>,
    ) -> Result<(), PumpError> {
        let ids = match shards {
            Some((ids, read_at)) if read_at.elapsed() < SHARDS_REFRESH => ids.clone(),
            _ => {
                let ids = shard_ids(&self.streams, &self.stream_arn).await?;
                *shards = Some((ids.clone(), tokio::time::Instant::now()));
                ids
            }
        };
        self.pump_once(&ids, positions).await
    }

    /// One pass over every shard: at most one batch from each.
    async fn pump_once(
        &self,
        shards: &[String],
        positions: &mut HashMap<String, Position>,
    ) -> Result<(), PumpError> {
        for shard in shards {
            let start = match self.start_at {
                StartAt::Oldest => Position::Start,
                StartAt::Latest => Position::Latest,
            };
            let position = positions.entry(shard.clone()).or_insert(start);
            let Some(iterator) = iterator(&self.streams, &self.stream_arn, shard, position).await?
            else {
                continue;
            };
            let page = match self
                .streams
                .get_records()
                .shard_iterator(iterator)
                .send()
                .await
            {
                Ok(page) => page,
                Err(source) => {
                    // A failed read (a timeout, a stalled emulator) keeps its place: the same
                    // iterator is tried again, so nothing written meanwhile is skipped. Only an
                    // iterator the stream refuses is given up, for one after the last delivery.
                    let refused = source.as_service_error().is_some_and(|error| {
                        error.is_expired_iterator_exception()
                            || error.is_trimmed_data_access_exception()
                    });
                    if refused {
                        *position = position.without_iterator();
                    }
                    return Err(PumpError::GetRecords(Box::new(source)));
                }
            };
            let Some(last) = page
                .records()
                .last()
                .and_then(|record| record.dynamodb())
                .and_then(|change| change.sequence_number())
            else {
                // Nothing new: read on from here next time (a `LATEST` iterator asked for again
                // would skip what was written meanwhile).
                if let Some(next) = page.next_shard_iterator() {
                    *position = Position::Following {
                        iterator: next.to_owned(),
                        delivered: position.delivered(),
                    };
                }
                continue;
            };
            let last = last.to_owned();
            let records = page
                .records()
                .iter()
                .map(|record| lambda_record(record, &self.stream_arn))
                .collect::<Result<Vec<_>, _>>()?;
            *position = match (
                self.deliver(records, last).await,
                page.next_shard_iterator(),
            ) {
                (Position::After(sequence), Some(next)) => Position::Following {
                    iterator: next.to_owned(),
                    delivered: Some(sequence),
                },
                (position, _) => position,
            };
        }
        Ok(())
    }

    /// Hands one batch to the handler; returns where to read from next.
    async fn deliver(&self, records: Vec<Value>, last: String) -> Position {
        let count = records.len();
        let invocation = lambda_runtime::LambdaEvent::new(
            json!({ "Records": records }),
            lambda_runtime::Context::default(),
        );
        let function = self.handler.name();
        match self.handler.handle(invocation).await {
            Ok(StreamBatchResponse {
                batch_item_failures,
            }) if batch_item_failures.is_empty() => {
                tracing::debug!(function, records = count, "stream pump: batch delivered");
                Position::After(last)
            }
            Ok(StreamBatchResponse {
                batch_item_failures,
            }) => {
                // As the event source mapping does: resume from the lowest failed record.
                let lowest = batch_item_failures
                    .iter()
                    .map(|failure| failure.item_identifier.as_str())
                    // Sequence numbers are decimal strings of up to 40 digits: shorter is lower.
                    .min_by_key(|sequence| (sequence.len(), *sequence))
                    .unwrap_or_default()
                    .to_owned();
                tracing::warn!(function, records = count, failed = batch_item_failures.len(), from = %lowest, "stream pump: batch partly failed; handing it over again");
                Position::At(lowest)
            }
            Err(error) => {
                // The handler refused the whole batch (not a stream event): skip past it, as a
                // mapping would after its retries, and say so loudly.
                tracing::error!(function, error = %error, records = count, "stream pump: the handler refused a batch");
                Position::After(last)
            }
        }
    }
}

/// A DynamoDB Streams API record in the JSON shape of a Lambda event record.
pub fn lambda_record(record: &Record, stream_arn: &str) -> Result<Value, PumpError> {
    let change = record.dynamodb().ok_or(PumpError::Incomplete("change"))?;
    let mut dynamodb = Map::new();
    if let Some(created) = change.approximate_creation_date_time() {
        dynamodb.insert("ApproximateCreationDateTime".into(), created.secs().into());
    }
    if let Some(keys) = change.keys() {
        dynamodb.insert("Keys".into(), dynamodb_item(keys)?);
    }
    if let Some(new_image) = change.new_image() {
        dynamodb.insert("NewImage".into(), dynamodb_item(new_image)?);
    }
    if let Some(old_image) = change.old_image() {
        dynamodb.insert("OldImage".into(), dynamodb_item(old_image)?);
    }
    dynamodb.insert("SequenceNumber".into(), change.sequence_number().into());
    dynamodb.insert("SizeBytes".into(), change.size_bytes().unwrap_or(0).into());
    dynamodb.insert(
        "StreamViewType".into(),
        change.stream_view_type().map(|view| view.as_str()).into(),
    );
    Ok(json!({
        "eventID": record.event_id(),
        "eventName": record.event_name().map(|name| name.as_str()),
        "eventVersion": record.event_version(),
        "eventSource": record.event_source(),
        "awsRegion": record.aws_region(),
        "eventSourceARN": stream_arn,
        "dynamodb": dynamodb,
    }))
}

fn dynamodb_item(item: &HashMap<String, AttributeValue>) -> Result<Value, PumpError> {
    item.iter()
        .map(|(name, value)| Ok((name.clone(), dynamodb_json(value)?)))
        .collect::<Result<Map<_, _>, _>>()
        .map(Value::Object)
}

/// DynamoDB JSON for the attribute types an outbox or seat item can hold.
fn dynamodb_json(value: &AttributeValue) -> Result<Value, PumpError> {
    Ok(match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(is_null) => json!({ "NULL": is_null }),
        AttributeValue::Ss(strings) => json!({ "SS": strings }),
        AttributeValue::L(list) => {
            json!({ "L": list.iter().map(dynamodb_json).collect::<Result<Vec<_>, _>>()? })
        }
        AttributeValue::M(map) => json!({ "M": dynamodb_item(map)? }),
        _ => return Err(PumpError::UnexpectedAttribute),
    })
}
