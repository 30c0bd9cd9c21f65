//! The origin only through CloudFront (docs/decisions/0025-the-origin-only-through-cloudfront.md),
//! checked on `template.yaml` itself: nothing in it gives the internet a way to a function but the
//! distribution, whose way in is the API's one domain with mutual TLS; what had to survive the
//! lock (the payment webhooks, the JWT check, a throttle per route) is still there; viewers get
//! TLS 1.2 on the service's own domain, and the distribution keeps access logs. No service is
//! needed: the template is read as YAML, short-form intrinsics (`!Ref`, `!If`...) as YAML tags.
//!
//! The lock is checked by [`ways_in_around_the_distribution`], which lists every way around it;
//! `a_way_in_added_back_is_caught` adds each known way back to a copy of the template and expects
//! it listed, so the check cannot quietly stop seeing one.

use lineup_tests::template::{conditional, is_no_value, reference, template};
use serde_yaml::Value;

/// The function triggers no one on the internet can call: schedules, table streams, queues.
/// An `HttpApi` event is the one internet trigger allowed, on the locked API only.
const PRIVATE_TRIGGERS: &[&str] = &["ScheduleV2", "DynamoDB", "SQS"];

/// The routes served without a JWT: the payment provider's signed webhooks, and the public,
/// cached routes of `status`.
const ROUTES_WITHOUT_JWT: &[&str] = &[
    "POST /orders/{orderId}/confirm",
    "POST /webhooks/stripe",
    "GET /events/{eventId}/status",
    "GET /events/{eventId}/draw",
    "GET /events/{eventId}/draw/{prefix}",
    "GET /events/{eventId}/seats",
    "GET /events/{eventId}/layout",
    "GET /events/{eventId}/layout/{version}",
];

/// The two payment webhooks: a provider's signed POST, checked by `confirm` over the raw body.
const WEBHOOK_ROUTES: &[&str] = &["POST /orders/{orderId}/confirm", "POST /webhooks/stripe"];

/// The template's resources of one type, by logical id.
fn resources_of<'t>(template: &'t Value, kind: &str) -> Vec<(&'t str, &'t Value)> {
    template["Resources"]
        .as_mapping()
        .expect("template.yaml has Resources")
        .iter()
        .filter(|(_, resource)| resource["Type"].as_str() == Some(kind))
        .map(|(id, resource)| (id.as_str().expect("a logical id is a string"), resource))
        .collect()
}

/// A function's events, by name.
fn events(function: &Value) -> Vec<(&str, &Value)> {
    function["Properties"]["Events"]
        .as_mapping()
        .map(|events| {
            events
                .iter()
                .map(|(name, event)| (name.as_str().unwrap_or("?"), event))
                .collect()
        })
        .unwrap_or_default()
}

/// Every `HttpApi` event of every function: (function, route key as `METHOD /path`, event).
fn http_routes(template: &Value) -> Vec<(&str, String, &Value)> {
    let mut routes = Vec::new();
    for (function, resource) in resources_of(template, "AWS::Serverless::Function") {
        for (_, event) in events(resource) {
            if event["Type"].as_str() == Some("HttpApi") {
                let properties = &event["Properties"];
                let key = format!(
                    "{} {}",
                    properties["Method"].as_str().unwrap_or("?"),
                    properties["Path"].as_str().unwrap_or("?")
                );
                routes.push((function, key, event));
            }
        }
    }
    routes
}

/// Every way a request could reach a function without going through the distribution, each as
/// a sentence; empty when the origin is locked as ADR 0025 says.
fn ways_in_around_the_distribution(template: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let resources = template["Resources"]
        .as_mapping()
        .expect("template.yaml has Resources");

    // No other kind of front door than the one locked HTTP API.
    for (id, resource) in resources {
        let kind = resource["Type"].as_str().unwrap_or_default();
        let other_door = matches!(
            kind,
            "AWS::Serverless::Api"
                | "AWS::ApiGateway::RestApi"
                | "AWS::ApiGateway::DomainName"
                | "AWS::ApiGatewayV2::Api"
                | "AWS::Lambda::Url"
                | "AWS::ElasticLoadBalancingV2::LoadBalancer"
                | "AWS::AppSync::GraphQLApi"
        );
        if other_door {
            found.push(format!(
                "{id:?} is a {kind}, another way in than the locked HTTP API"
            ));
        }
    }

    // The HTTP APIs: no execute-api endpoint, and a way in only through a mutual-TLS domain.
    let apis: Vec<&str> = resources_of(template, "AWS::Serverless::HttpApi")
        .into_iter()
        .map(|(id, api)| {
            if api["Properties"]["DisableExecuteApiEndpoint"] != Value::Bool(true) {
                found.push(format!(
                    "{id} keeps its execute-api endpoint (DisableExecuteApiEndpoint is not a plain true)"
                ));
            }
            if api.get("Condition").is_some() {
                found.push(format!("{id} exists only under a condition"));
            }
            id
        })
        .collect();
    if template["Globals"]["HttpApi"]["DisableExecuteApiEndpoint"] == Value::Bool(false) {
        found.push("Globals turn the HTTP API's execute-api endpoint back on".to_owned());
    }

    let domains = resources_of(template, "AWS::ApiGatewayV2::DomainName");
    for (id, domain) in &domains {
        let mutual_tls = &domain["Properties"]["MutualTlsAuthentication"];
        if reference(&mutual_tls["TruststoreUri"]) != Some("OriginTruststoreUri") {
            found.push(format!(
                "{id} does not require CloudFront's client certificate (MutualTlsAuthentication's \
                 TruststoreUri is not !Ref OriginTruststoreUri)"
            ));
        }
        if domain.get("Condition").is_some() {
            found.push(format!("{id}'s mutual TLS exists only under a condition"));
        }
        if reference(&domain["Properties"]["DomainName"]) != Some("OriginDomainName") {
            found.push(format!(
                "{id} is not the origin's domain (OriginDomainName)"
            ));
        }
    }
    for (id, mapping) in resources_of(template, "AWS::ApiGatewayV2::ApiMapping") {
        let to_locked_domain = reference(&mapping["Properties"]["DomainName"])
            .is_some_and(|domain| domains.iter().any(|(locked, _)| *locked == domain));
        if !to_locked_domain {
            found.push(format!("{id} maps the API to a domain without mutual TLS"));
        }
    }
    // Every value the lock is made of must be given: a default could leave it empty.
    for parameter in [
        "OriginDomainName",
        "OriginCertificateArn",
        "OriginTruststoreUri",
        "OriginClientCertificateArn",
    ] {
        let declared = &template["Parameters"][parameter];
        if declared.is_null() {
            found.push(format!("the parameter {parameter} is gone"));
        } else if declared.get("Default").is_some() {
            found.push(format!("the parameter {parameter} has a default"));
        }
    }

    // The functions: no URL of their own, no trigger but the locked API's routes and private
    // sources.
    if template["Globals"]["Function"]
        .get("FunctionUrlConfig")
        .is_some()
    {
        found.push("Globals give every function a URL (FunctionUrlConfig)".to_owned());
    }
    for (id, function) in resources_of(template, "AWS::Serverless::Function") {
        if function["Properties"].get("FunctionUrlConfig").is_some() {
            found.push(format!("{id} has a function URL (FunctionUrlConfig)"));
        }
        for (name, event) in events(function) {
            let kind = event["Type"].as_str().unwrap_or_default();
            if kind == "HttpApi" {
                let api = reference(&event["Properties"]["ApiId"]);
                if !api.is_some_and(|api| apis.contains(&api)) {
                    found.push(format!(
                        "{id}'s {name} route is on no locked API (an HttpApi event without \
                         ApiId: !Ref HttpApi makes SAM's own, public API)"
                    ));
                }
            } else if !PRIVATE_TRIGGERS.contains(&kind) {
                found.push(format!(
                    "{id}'s {name} is a {kind} event: not a trigger known to be private (if it \
                     is, add it to PRIVATE_TRIGGERS)"
                ));
            }
        }
    }
    for (id, permission) in resources_of(template, "AWS::Lambda::Permission") {
        let properties = &permission["Properties"];
        let principal = properties["Principal"].as_str().unwrap_or_default();
        let source = serde_yaml::to_string(&properties["SourceArn"]).unwrap_or_default();
        let through_the_api =
            principal == "apigateway.amazonaws.com" && source.contains("${HttpApi}");
        if !through_the_api || properties.get("FunctionUrlAuthType").is_some() {
            found.push(format!(
                "{id} lets {principal:?} invoke a function other than through the locked HTTP API"
            ));
        }
    }

    // The distribution reaches the API's domain only, presenting the client certificate.
    for (id, distribution) in resources_of(template, "AWS::CloudFront::Distribution") {
        let origins = distribution["Properties"]["DistributionConfig"]["Origins"]
            .as_sequence()
            .cloned()
            .unwrap_or_default();
        for origin in &origins {
            let name = origin["Id"].as_str().unwrap_or("?");
            if reference(&origin["DomainName"]) != Some("OriginDomainName") {
                found.push(format!(
                    "{id}'s origin {name} is not the API's mutual-TLS domain (OriginDomainName)"
                ));
            }
            let custom = &origin["CustomOriginConfig"];
            if reference(&custom["OriginMtlsConfig"]["ClientCertificateArn"])
                != Some("OriginClientCertificateArn")
            {
                found.push(format!(
                    "{id}'s origin {name} presents no client certificate (OriginMtlsConfig)"
                ));
            }
            if custom["OriginProtocolPolicy"].as_str() != Some("https-only") {
                found.push(format!("{id}'s origin {name} may use plain HTTP"));
            }
        }
    }

    // Nothing names the execute-api endpoint any more: it does not answer.
    let text = serde_yaml::to_string(&template["Resources"]).unwrap_or_default()
        + &serde_yaml::to_string(&template["Outputs"]).unwrap_or_default();
    if text.contains("execute-api.${AWS::Region}") {
        found.push("something still names the execute-api endpoint as an address".to_owned());
    }
    found
}

#[test]
fn nothing_reaches_a_function_but_through_the_distribution() {
    let found = ways_in_around_the_distribution(&template());
    assert!(
        found.is_empty(),
        "ways in around CloudFront:\n{}",
        found.join("\n")
    );
}

/// Each known way around the lock, added back to a copy of the template, is listed.
#[test]
fn a_way_in_added_back_is_caught() {
    type Opening = fn(&mut Value);
    let openings: &[(&str, Opening)] = &[
        ("the execute-api endpoint back on", |t| {
            t["Resources"]["HttpApi"]["Properties"]
                .as_mapping_mut()
                .unwrap()
                .remove("DisableExecuteApiEndpoint");
        }),
        ("a function URL with AuthType NONE", |t| {
            t["Resources"]["JoinFunction"]["Properties"]["FunctionUrlConfig"] =
                serde_yaml::from_str("{AuthType: NONE}").unwrap();
        }),
        ("a REST API event on the webhook", |t| {
            t["Resources"]["ConfirmFunction"]["Properties"]["Events"]["Rest"] =
                serde_yaml::from_str("{Type: Api, Properties: {Method: POST, Path: /pay}}")
                    .unwrap();
        }),
        ("an HttpApi event on SAM's implicit API", |t| {
            t["Resources"]["ConfirmFunction"]["Properties"]["Events"]["Implicit"] =
                serde_yaml::from_str("{Type: HttpApi, Properties: {Method: POST, Path: /x}}")
                    .unwrap();
        }),
        ("the origin at the execute-api address", |t| {
            t["Resources"]["Distribution"]["Properties"]["DistributionConfig"]["Origins"][1]
                ["DomainName"] = serde_yaml::from_str(
                "!Sub \"${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}\"",
            )
            .unwrap();
        }),
        ("the domain without mutual TLS", |t| {
            t["Resources"]["OriginDomain"]["Properties"]
                .as_mapping_mut()
                .unwrap()
                .remove("MutualTlsAuthentication");
        }),
        ("an origin without the client certificate", |t| {
            t["Resources"]["Distribution"]["Properties"]["DistributionConfig"]["Origins"][0]
                ["CustomOriginConfig"]
                .as_mapping_mut()
                .unwrap()
                .remove("OriginMtlsConfig");
        }),
        ("an invoke permission for anyone", |t| {
            t["Resources"]["OpenDoor"] = serde_yaml::from_str(
                "{Type: AWS::Lambda::Permission, Properties: {Action: lambda:InvokeFunction, \
                 FunctionName: !Ref JoinFunction, Principal: '*'}}",
            )
            .unwrap();
        }),
        ("a second, public domain", |t| {
            t["Resources"]["PublicDomain"] = serde_yaml::from_str(
                "{Type: AWS::ApiGatewayV2::DomainName, Properties: {DomainName: api.example.com}}",
            )
            .unwrap();
        }),
        ("the truststore left to a default", |t| {
            t["Parameters"]["OriginTruststoreUri"]["Default"] = Value::String(String::new());
        }),
    ];
    for (opening, open) in openings {
        let mut template = template();
        open(&mut template);
        assert!(
            !ways_in_around_the_distribution(&template).is_empty(),
            "{opening}: not caught"
        );
    }
}

#[test]
fn the_payment_webhooks_take_a_signed_post_without_a_jwt() {
    let template = template();
    let routes = http_routes(&template);
    for webhook in WEBHOOK_ROUTES {
        let (function, _, event) = routes
            .iter()
            .find(|(_, key, _)| key == webhook)
            .unwrap_or_else(|| panic!("no route {webhook}"));
        assert_eq!(*function, "ConfirmFunction", "{webhook}");
        let properties = &event["Properties"];
        assert_eq!(
            reference(&properties["ApiId"]),
            Some("HttpApi"),
            "{webhook}"
        );
        assert_eq!(
            properties["Auth"]["Authorizer"].as_str(),
            Some("NONE"),
            "{webhook}: the provider sends no JWT"
        );
    }
    // The common rule set stays off the generic webhook: a false positive is a payment refunded.
    let acl = serde_yaml::to_string(&template["Resources"]["WebAcl"]).unwrap();
    assert!(acl.contains("^/orders/[^/]+/confirm$"), "{acl}");
}

#[test]
fn the_customer_routes_still_need_a_verified_jwt() {
    let template = template();
    let auth = &template["Resources"]["HttpApi"]["Properties"]["Auth"];
    let default = auth["DefaultAuthorizer"]
        .as_str()
        .expect("the HTTP API has a default authorizer");
    let authorizer = &auth["Authorizers"][default];
    assert_eq!(
        authorizer["IdentitySource"].as_str(),
        Some("$request.header.Authorization")
    );
    assert_eq!(
        reference(&authorizer["JwtConfiguration"]["issuer"]),
        Some("JwtIssuer")
    );
    assert_eq!(
        reference(&authorizer["JwtConfiguration"]["audience"]),
        Some("JwtAudience")
    );
    let mut without_jwt: Vec<String> = http_routes(&template)
        .into_iter()
        .filter(|(_, _, event)| event["Properties"]["Auth"]["Authorizer"].as_str() == Some("NONE"))
        .map(|(_, key, _)| key)
        .collect();
    without_jwt.sort();
    let mut expected: Vec<String> = ROUTES_WITHOUT_JWT.iter().map(|r| r.to_string()).collect();
    expected.sort();
    assert_eq!(without_jwt, expected, "the routes served without a JWT");
    // Nothing else names an authorizer of its own: the rest take the default, the JWT.
    for (function, key, event) in http_routes(&template) {
        let named = event["Properties"]["Auth"]["Authorizer"].as_str();
        assert!(
            named.is_none() || named == Some("NONE") || named == Some(default),
            "{function} {key}: authorizer {named:?}"
        );
    }
}

#[test]
fn every_route_keeps_a_throttle_of_its_own() {
    let template = template();
    let settings = template["Resources"]["HttpApi"]["Properties"]["RouteSettings"]
        .as_mapping()
        .expect("the HTTP API has RouteSettings");
    let routes = http_routes(&template);
    assert!(routes.len() >= 15, "{} routes", routes.len());
    for (function, key, _) in &routes {
        let limits = settings
            .get(key.as_str())
            .unwrap_or_else(|| panic!("{function} {key} has no throttle of its own"));
        for limit in ["ThrottlingRateLimit", "ThrottlingBurstLimit"] {
            assert!(
                reference(&limits[limit]).is_some() || limits[limit].is_number(),
                "{key}: {limit}"
            );
        }
    }
    for webhook in WEBHOOK_ROUTES {
        let limits = &settings[*webhook];
        assert_eq!(
            reference(&limits["ThrottlingRateLimit"]),
            Some("WebhookRouteRateLimit")
        );
        assert_eq!(
            reference(&limits["ThrottlingBurstLimit"]),
            Some("WebhookRouteBurstLimit")
        );
    }
}

#[test]
fn viewers_get_tls_1_2_on_the_services_own_domain() {
    let template = template();
    for parameter in ["DomainName", "CertificateArn"] {
        assert_eq!(
            template["Parameters"][parameter]["Default"].as_str(),
            Some(""),
            "{parameter}: optional"
        );
    }
    let config = &template["Resources"]["Distribution"]["Properties"]["DistributionConfig"];
    let (condition, own, cloudfronts) =
        conditional(&config["ViewerCertificate"]).expect("ViewerCertificate is an !If");
    assert_eq!(condition, "HasViewerDomain");
    assert_eq!(reference(&own["AcmCertificateArn"]), Some("CertificateArn"));
    assert_eq!(own["MinimumProtocolVersion"].as_str(), Some("TLSv1.2_2021"));
    assert_eq!(own["SslSupportMethod"].as_str(), Some("sni-only"));
    assert_eq!(
        cloudfronts["CloudFrontDefaultCertificate"],
        Value::Bool(true)
    );

    let (condition, aliases, none) = conditional(&config["Aliases"]).expect("Aliases is an !If");
    assert_eq!(condition, "HasViewerDomain");
    assert_eq!(
        aliases
            .as_sequence()
            .map(|names| names.iter().map(reference).collect::<Vec<_>>()),
        Some(vec![Some("DomainName")])
    );
    assert!(is_no_value(none));

    // The condition needs both: a domain without its certificate is no domain.
    let condition = serde_yaml::to_string(&template["Conditions"]["HasViewerDomain"]).unwrap();
    assert!(condition.contains("DomainName") && condition.contains("CertificateArn"));
    assert!(
        template["Rules"]["ViewerDomainAndCertificateTogether"].is_mapping(),
        "a rule refuses one without the other"
    );
    // The origin speaks TLS 1.2 too, both ways.
    for origin in config["Origins"].as_sequence().unwrap() {
        let protocols = &origin["CustomOriginConfig"]["OriginSSLProtocols"];
        assert_eq!(
            protocols,
            &serde_yaml::from_str::<Value>("[TLSv1.2]").unwrap()
        );
    }
    let domain = &template["Resources"]["OriginDomain"]["Properties"];
    assert_eq!(
        domain["DomainNameConfigurations"][0]["SecurityPolicy"].as_str(),
        Some("TLS_1_2")
    );
}

#[test]
fn the_distribution_logs_every_request_to_a_private_expiring_bucket() {
    let template = template();
    let config = &template["Resources"]["Distribution"]["Properties"]["DistributionConfig"];
    let (condition, logging, off) = conditional(&config["Logging"]).expect("Logging is an !If");
    assert_eq!(condition, "HasAccessLogs");
    assert!(is_no_value(off));
    let bucket_attribute = match &logging["Bucket"] {
        Value::Tagged(tagged) if tagged.tag == "GetAtt" => tagged.value.as_str(),
        _ => None,
    };
    assert_eq!(bucket_attribute, Some("AccessLogBucket.RegionalDomainName"));

    let bucket = &template["Resources"]["AccessLogBucket"];
    assert_eq!(bucket["Type"].as_str(), Some("AWS::S3::Bucket"));
    assert_eq!(bucket["Condition"].as_str(), Some("HasAccessLogs"));
    let properties = &bucket["Properties"];
    let encryption = &properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0];
    assert!(encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"]
        .as_str()
        .is_some());
    let public_access = properties["PublicAccessBlockConfiguration"]
        .as_mapping()
        .expect("the bucket blocks public access");
    for setting in [
        "BlockPublicAcls",
        "BlockPublicPolicy",
        "IgnorePublicAcls",
        "RestrictPublicBuckets",
    ] {
        assert_eq!(
            public_access.get(setting),
            Some(&Value::Bool(true)),
            "{setting}"
        );
    }
    let expiry = properties["LifecycleConfiguration"]["Rules"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|rule| rule["Status"].as_str() == Some("Enabled"))
        .expect("an enabled lifecycle rule");
    assert_eq!(
        reference(&expiry["ExpirationInDays"]),
        Some("AccessLogDays")
    );

    let days = &template["Parameters"]["AccessLogDays"];
    assert!(
        days["Default"].as_u64().is_some_and(|days| days > 0),
        "on by default"
    );
    let condition = serde_yaml::to_string(&template["Conditions"]["HasAccessLogs"]).unwrap();
    assert!(condition.contains("AccessLogDays"), "{condition}");
}
