//! Unit tests of which line a joiner takes ([`crate::application::group_line`]) over the
//! in-memory queue and events table: the first group counting the caller (an imported list, a
//! claim alone or in a list), nobody else's; after a group's window, the general line, except
//! for a member already placed in the group's line, who keeps that place.

use std::sync::Arc;

use crate::application::group_line::line_for;
use crate::application::ports::event_records::{EventRecords, GroupMembers};
use crate::application::ports::queue::{EventSettingsStore, WaitingLine};
use crate::application::queue_api::QueueApi;
use crate::domain::clock::FixedClock;
use crate::domain::event_settings::EventSettings;
use crate::domain::ids::{CustomerId, EventId, GroupName};
use crate::domain::priority_group::{Membership, PriorityGroup, PriorityGroups};

use super::admit::{customer, secs, t0, World};

struct Presale {
    world: World,
    api: QueueApi,
    event: EventId,
    fanclub: EventId,
    card: EventId,
}

impl Presale {
    /// An open event with two groups: `fanclub` (an imported list, taking members until
    /// t0 + 100 s) before `card` (the claim `tier` = `gold`).
    async fn new() -> Self {
        let world = World::new();
        let fanclub_name = GroupName::parse("fanclub").unwrap();
        let card_name = GroupName::parse("card").unwrap();
        let groups = PriorityGroups::new(vec![
            PriorityGroup {
                name: fanclub_name.clone(),
                membership: Membership::List,
                opens_at: t0() - secs(60),
                closes_at: Some(t0() + secs(100)),
                ticket_limit: None,
                sections: Vec::new(),
            },
            PriorityGroup {
                name: GroupName::parse("insiders").unwrap(),
                membership: Membership::Code,
                opens_at: t0() - secs(60),
                closes_at: None,
                ticket_limit: None,
                sections: Vec::new(),
            },
            PriorityGroup {
                name: card_name.clone(),
                membership: Membership::Claim {
                    claim: "tier".into(),
                    value: "gold".into(),
                },
                opens_at: t0() - secs(60),
                closes_at: None,
                ticket_limit: None,
                sections: Vec::new(),
            },
        ])
        .unwrap();
        let settings = EventSettings {
            groups,
            ..EventSettings::opening_at(t0() - secs(60))
        };
        let event = world.open("presale", settings.clone()).await;
        let (fanclub, card) = (
            event.group_line(&fanclub_name),
            event.group_line(&card_name),
        );
        for line in [&fanclub, &card] {
            let seed = world
                .records
                .save_settings(line, &settings.for_line(line), None)
                .await
                .unwrap();
            world
                .queue
                .configure(line, &settings.for_line(line), &seed)
                .await
                .unwrap();
        }
        let api = world.queue_api(Arc::new(FixedClock::at(t0())));
        Self {
            world,
            api,
            event,
            fanclub,
            card,
        }
    }

    async fn line(
        &self,
        who: &CustomerId,
        tier: Option<&str>,
        at: std::time::SystemTime,
    ) -> EventId {
        line_for(
            &self.api,
            |name| (name == "tier").then_some(tier).flatten(),
            None,
            &self.event,
            who,
            at,
        )
        .await
        .unwrap()
    }
}

#[tokio::test]
async fn a_joiner_takes_the_first_group_that_counts_them_else_the_events_line() {
    let presale = Presale::new().await;
    let (fan, gold, both, nobody) = (customer(1), customer(2), customer(3), customer(4));
    presale
        .world
        .records
        .import_members(&presale.fanclub, &[fan.clone(), both.clone()])
        .await
        .unwrap();
    assert_eq!(presale.line(&fan, None, t0()).await, presale.fanclub);
    assert_eq!(presale.line(&gold, Some("gold"), t0()).await, presale.card);
    assert_eq!(
        presale.line(&gold, Some("[silver gold]"), t0()).await,
        presale.card
    );
    assert_eq!(
        presale.line(&both, Some("gold"), t0()).await,
        presale.fanclub
    );
    assert_eq!(
        presale.line(&nobody, Some("silver"), t0()).await,
        presale.event
    );
    assert_eq!(presale.line(&nobody, None, t0()).await, presale.event);
}

#[tokio::test]
async fn after_its_window_a_group_takes_nobody_new_but_keeps_the_places_it_gave() {
    let presale = Presale::new().await;
    let (placed, late) = (customer(1), customer(2));
    presale
        .world
        .records
        .import_members(&presale.fanclub, &[placed.clone(), late.clone()])
        .await
        .unwrap();
    presale
        .world
        .restorer
        .numbers
        .reserve_through(&presale.fanclub, 10, t0())
        .await
        .unwrap();
    presale
        .world
        .queue
        .join(&presale.fanclub, &placed, t0())
        .await
        .unwrap();
    let after = t0() + secs(100);
    assert_eq!(presale.line(&placed, None, after).await, presale.fanclub);
    assert_eq!(presale.line(&late, None, after).await, presale.event);
}

#[tokio::test]
async fn a_code_made_for_a_group_puts_its_holder_in_the_groups_line() {
    let presale = Presale::new().await;
    let insiders = GroupName::parse("insiders").unwrap();
    let holder = customer(5);
    let line = |code_group: Option<GroupName>| {
        let presale = &presale;
        let holder = holder.clone();
        async move {
            line_for(
                &presale.api,
                |_| None,
                code_group.as_ref(),
                &presale.event,
                &holder,
                t0(),
            )
            .await
            .unwrap()
        }
    };
    assert_eq!(
        line(Some(insiders.clone())).await,
        presale.event.group_line(&insiders)
    );
    // A code for no group, or for a group whose members are not code holders, is no membership.
    assert_eq!(line(None).await, presale.event);
    assert_eq!(
        line(Some(GroupName::parse("card").unwrap())).await,
        presale.event
    );
}
