//! Each Lambda function's start-up, whole: read its configuration (a bad setting stops it here,
//! at cold start), fetch its secrets, open its adapters, build its handler through
//! [`crate::wiring::backends`] and hand it to the runtime. `functions/<name>/src/main.rs` calls
//! the function of the same name and nothing else.

use std::future::Future;
use std::sync::Arc;

use lambda_http::{Body, Request, Response};
pub use lambda_runtime::Error;
use lambda_runtime::{service_fn, LambdaEvent};
use serde_json::Value;

use crate::adapters::aws;
use crate::adapters::redis::connection::{RedisSettings, RedisUser};
use crate::adapters::redis::queue::RedisQueue;
use crate::adapters::secret_source::origin_guard;
use crate::adapters::sqs::{SqsPublisher, SqsRetries};
use crate::adapters::stripe::StripeProvider;
use crate::application::http::origin::OriginGuard;
use crate::application::{
    admit, availability, checkout, confirm, hold, join, outbox_stream, poll, reconcile, refund,
    status,
};
use crate::domain::clock::SystemClock;
use crate::wiring::backends::{self, Admit, Expire, Queue};
use crate::wiring::config::{
    AdmitConfig, AvailabilityConfig, CheckoutConfig, ConfirmConfig, ExpireConfig, HoldConfig,
    JoinConfig, OutboxStreamConfig, PollConfig, ReconcileConfig, RefundConfig, StatusConfig,
    StripeSettings,
};
use crate::wiring::logging;

/// `join`: `POST /events/{eventId}/queue`.
pub async fn join() -> Result<(), Error> {
    logging::init();
    let config = JoinConfig::from_env()?;
    let origin = origin_guard(config.origin.clone()).await?;
    let redis = redis_queue(&config.queue.redis, config.queue.redis_user.clone()).await?;
    let queue = Queue::open(redis, &config.events);
    let key = config.queue.signing_key.load().await?;
    let api = queue
        .queue_api(key, Arc::new(SystemClock), config.required_claim)
        .with_challenge_exempt_claim(config.challenge_exempt_claim);
    serve_http(origin, move |request| {
        let api = api.clone();
        async move {
            // Picks up a rotated signing key every few minutes (one request does it).
            api.key.refresh_if_stale().await;
            join::handle(&api, request).await
        }
    })
    .await
}

/// `poll`: `GET` and `DELETE /events/{eventId}/queue/{queueId}`.
pub async fn poll() -> Result<(), Error> {
    logging::init();
    let config = PollConfig::from_env()?;
    let origin = origin_guard(config.origin.clone()).await?;
    let redis = redis_queue(&config.queue.redis, config.queue.redis_user.clone()).await?;
    let queue = Queue::open(redis, &config.events);
    let key = config.queue.signing_key.load().await?;
    let api = queue.queue_api(key, Arc::new(SystemClock), None);
    serve_http(origin, move |request| {
        let api = api.clone();
        async move {
            api.key.refresh_if_stale().await;
            poll::handle(&api, request).await
        }
    })
    .await
}

/// `hold`: holds, releases, the order's status.
pub async fn hold() -> Result<(), Error> {
    logging::init();
    let config = HoldConfig::from_env()?;
    let origin = origin_guard(config.origin.clone()).await?;
    let redis = redis_queue(&config.queue.redis, config.queue.redis_user.clone()).await?;
    let queue = Queue::open(redis, &config.events);
    let key = config.queue.signing_key.load().await?;
    let api = queue.hold_api(Arc::new(config.ledger.ledger()), key, Arc::new(SystemClock));
    serve_http(origin, move |request| {
        let api = api.clone();
        async move {
            api.key.refresh_if_stale().await;
            hold::handle(&api, request).await
        }
    })
    .await
}

/// `confirm`: the payment webhooks, `POST /orders/{orderId}/confirm` and `POST /webhooks/stripe`.
pub async fn confirm() -> Result<(), Error> {
    logging::init();
    let config = ConfirmConfig::from_env()?;
    let origin = origin_guard(config.origin.clone()).await?;
    // The webhook reads no events table: the queue's records are never touched here.
    let queue = Arc::new(redis_queue(&config.redis, config.redis_user.clone()).await?);
    let secret = config.webhook_secret.load().await?;
    let mut api = backends::confirm_api(
        queue,
        Arc::new(config.ledger.ledger()),
        secret,
        Arc::new(SystemClock),
    );
    if let Some(stripe) = config.stripe_webhook_secret {
        api.stripe_secret = Some(stripe.load().await?);
    }
    serve_http(origin, move |request| {
        let api = api.clone();
        async move {
            // Picks up rotated webhook secrets every few minutes (one request does it).
            api.secret.refresh_if_stale().await;
            if let Some(stripe) = &api.stripe_secret {
                stripe.refresh_if_stale().await;
            }
            confirm::handle(&api, request).await
        }
    })
    .await
}

/// `status`: the public, cacheable routes.
pub async fn status() -> Result<(), Error> {
    logging::init();
    let config = StatusConfig::from_env()?;
    let origin = origin_guard(config.origin.clone()).await?;
    let redis = redis_queue(&config.redis, config.redis_user.clone()).await?;
    let api = Queue::open(redis, &config.events).status_api();
    serve_http(origin, move |request| {
        let api = api.clone();
        async move { status::handle(&api, request).await }
    })
    .await
}

/// `admit`: the scheduled admission loop, about a minute per invocation.
pub async fn admit() -> Result<(), Error> {
    logging::init();
    let config = AdmitConfig::from_env()?;
    // The statuses it writes and the draws it makes pace a big opening alike.
    let queue = redis_queue(&config.redis, config.redis_user.clone())
        .await?
        .with_edge_budget(config.edge_budget);
    let admit = Admit::new(
        Queue::new(Arc::new(queue), Arc::new(config.events.records())),
        Some(Arc::new(config.ledger.ledger())),
    );
    let rebuild = admit.rebuild();
    let (admit, rebuild, config) = (&admit, rebuild.as_ref(), &config);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        admit::admit_for_invocation(admit.ports(rebuild), &SystemClock, &config.pace(), event).await
    }))
    .await
}

/// `expire`: the scheduled sweep of lapsed holds.
pub async fn expire() -> Result<(), Error> {
    logging::init();
    let config = ExpireConfig::from_env()?;
    let expire = Expire::new(
        Arc::new(config.ledger.ledger()),
        Arc::new(redis_queue(&config.redis, config.redis_user.clone()).await?),
    );
    let expiry = expire.expiry(&SystemClock);
    let expiry = &expiry;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        expiry.handle(event).await
    }))
    .await
}

/// `availability`: the seats table's stream, kept as the seat map in Redis.
pub async fn availability() -> Result<(), Error> {
    logging::init();
    let config = AvailabilityConfig::from_env()?;
    let seat_map = redis_queue(&config.redis, config.redis_user.clone())
        .await?
        .availability_board();
    let seat_map = &seat_map;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        availability::handle(seat_map, event).await
    }))
    .await
}

/// `outbox-stream`: the outbox table's stream, published to the ticket queue.
pub async fn outbox_stream() -> Result<(), Error> {
    logging::init();
    // A missing queue URL stops the function here, before it takes a batch.
    let config = OutboxStreamConfig::from_env()?;
    let mut publisher = SqsPublisher::new(aws::sqs(&config.aws), config.publisher.queue_url);
    if let Some(refunds) = config.publisher.refund_queue_url {
        publisher = publisher.with_refund_queue(refunds);
    }
    let publisher = &publisher;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        outbox_stream::handle(publisher, event).await
    }))
    .await
}

/// `checkout`: `POST /orders/{orderId}/payment` and `DELETE /events/{eventId}/holds/{orderId}`.
pub async fn checkout() -> Result<(), Error> {
    logging::init();
    let config = CheckoutConfig::from_env()?;
    let origin = origin_guard(config.origin.clone()).await?;
    let ledger = Arc::new(config.ledger.ledger());
    let provider = stripe_provider(&config.stripe).await?;
    let api = checkout::CheckoutApi {
        orders: ledger.clone(),
        checkout: ledger,
        provider: Arc::new(provider),
        publishable_key: config.publishable_key,
        clock: Arc::new(SystemClock),
    };
    serve_http(origin, move |request| {
        let api = api.clone();
        async move { checkout::handle(&api, request).await }
    })
    .await
}

/// `reconcile`: scheduled every minute; every open payment looked at again through the
/// provider, once per invocation.
pub async fn reconcile() -> Result<(), Error> {
    logging::init();
    let config = ReconcileConfig::from_env()?;
    let ledger = config.ledger.ledger();
    let provider = stripe_provider(&config.stripe).await?;
    let (ledger, provider) = (&ledger, &provider);
    lambda_runtime::run(service_fn(move |_: LambdaEvent<Value>| async move {
        let ports = reconcile::ReconcilePorts {
            orders: ledger,
            ledger: ledger as &dyn crate::application::ports::ledger::PaymentLedger,
            refunds: ledger,
            provider,
            clock: &SystemClock,
        };
        Ok::<_, Error>(reconcile::reconcile(&ports, None).await?)
    }))
    .await
}

/// `refund`: fed by the refund queue; carries out each `refund_required` at the provider and
/// hands back what could not be done now (`ReportBatchItemFailures`).
pub async fn refund() -> Result<(), Error> {
    logging::init();
    let config = RefundConfig::from_env()?;
    let ledger = config.ledger.ledger();
    let provider = stripe_provider(&config.stripe).await?;
    let retries = SqsRetries::new(aws::sqs(&config.ledger.aws), config.queue_url.clone());
    let (ledger, provider, retries) = (&ledger, &provider, &retries);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let batch: refund::QueueBatch = serde_json::from_value(event.payload)?;
        let ports = refund::RefundPorts {
            ledger,
            provider,
            retries,
            clock: &SystemClock,
        };
        Ok::<_, Error>(refund::handle_batch(&ports, batch).await)
    }))
    .await
}

/// The queue adapter over the Redis `settings` name, signed in as the function's own Redis
/// user when it has one (its password fetched now, at cold start: one it cannot read stops the
/// function here), else as the default user (local runs). The connection is made on first use.
async fn redis_queue(
    settings: &RedisSettings,
    user: Option<RedisUser>,
) -> Result<RedisQueue, Error> {
    let credentials = match user {
        Some(user) => Some(user.sign_in().await?),
        None => None,
    };
    Ok(RedisQueue::open_as(settings, credentials.as_ref())?)
}

/// The Stripe adapter, with Lineup's key as fetched at cold start (a rotated key reaches new
/// instances).
async fn stripe_provider(settings: &StripeSettings) -> Result<StripeProvider, Error> {
    let api_key = settings.api_key.clone().load().await?;
    let key = api_key.ring().current().clone();
    Ok(StripeProvider::open(settings.api_base.clone(), key)?)
}

/// Serves HTTP API requests: a request that skipped CloudFront is refused (403) before anything
/// else is read; the others go to `handle`.
async fn serve_http<H, F>(origin: OriginGuard, handle: H) -> Result<(), Error>
where
    H: Fn(Request) -> F + Clone + Send + 'static,
    F: Future<Output = Response<Body>> + Send,
{
    lambda_http::run(lambda_http::service_fn(move |request: Request| {
        let (origin, handle) = (origin.clone(), handle.clone());
        async move {
            if let Some(refused) = origin.refuse(&request).await {
                return Ok::<_, Error>(refused);
            }
            Ok(handle(request).await)
        }
    }))
    .await
}
