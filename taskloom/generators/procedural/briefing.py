"""The opening of a procedural instruction: who the agent is, and the situation.

Two tasks of the same skill and phrasing differ in their data, which the instruction does
not show; their openings must differ too, or a corpus of them reads as one task many
times. So the opening draws, from its own random stream, a persona (the domain's role or
another that does the work), how the scenario is told (its description, with a line or two of
circumstance: who asked, when, and why it matters now) and the order of the parts. None of it
states anything the checks check: it is the story around the steps, never a step.
"""

from __future__ import annotations

import random

from taskloom.generators.procedural.domains import Domain

PERSONAS = ("{role} at {org}", "{role} at {org} this week", "the person on call at {org}",
            "a contractor helping {org}", "new to {org}'s {team} team",
            "{role} covering for {person} at {org}", "the only engineer awake at {org}",
            "on {org}'s {team} rotation", "{role}; {org} brought you in last month")
TEAMS = ("platform", "operations", "data", "infrastructure", "support", "tooling")
CIRCUMSTANCES = (
    "{Person} from the {team} team asked for this before {when}.",
    "Ticket {ticket} landed in your queue {when_past}.",
    "{Person} flagged this in {meeting}, and will look at your result before {when}.",
    "It came up {when_past}; {person} is waiting on it.",
    "The {team} team noticed it {when_past} and handed it to you.",
    "{Person} wrote in the team channel: \"can someone look at this before {when}?\"",
    "This is on the checklist for {meeting}.",
    "An alert fired {when_past}, and {person} pointed you here.",
)
STAKES = (
    "{Person} will forward your result to {audience}.",
    "The result goes into {audience}'s {report}.",
    "If this slips, {audience} will ask why at {meeting}.",
    "Keep it simple: {person} has to be able to rerun the same thing later.",
    "{Audience} will read the result first thing tomorrow.",
    "{Person} promised {audience} an answer by {when}.",
    "Last time this was done by hand and took {person} a whole afternoon.",
)
AUDIENCES = ("the on-call lead", "finance", "the security officer", "the product owner",
             "the customer success team", "the auditors", "management", "the vendor")
REPORTS = ("weekly report", "incident timeline", "status page", "audit folder",
           "handover notes", "dashboard")
WHEN = ("the end of the day", "noon", "tomorrow's stand-up", "the weekly review",
        "Friday", "the next release", "the audit on Monday", "close of business")
WHEN_PAST = ("this morning", "overnight", "an hour ago", "during the weekend",
             "after lunch", "late yesterday", "at 03:00 UTC", "just before the freeze")
MEETINGS = ("this morning's stand-up", "the incident review", "the weekly sync",
            "the quarterly audit", "the retro", "the planning meeting")


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


def opening(rng: random.Random, domain: Domain, description: str) -> str:
    """The paragraph before the steps: a persona and the scenario, told one of several ways."""
    words = {"role": domain.role, "org": domain.org, "team": rng.choice(TEAMS),
             "person": rng.choice(domain.people).capitalize(), "when": rng.choice(WHEN),
             "when_past": rng.choice(WHEN_PAST), "meeting": rng.choice(MEETINGS),
             "ticket": f"{domain.name.upper()}-{rng.randint(100, 9999)}",
             "audience": rng.choice(AUDIENCES), "report": rng.choice(REPORTS)}
    words["Person"], words["Audience"] = words["person"], _capital(words["audience"])
    persona = "You are " + rng.choice(PERSONAS).format(**words) + "."
    told = [rng.choice(CIRCUMSTANCES)] + ([rng.choice(STAKES)] if rng.random() < 0.6 else [])
    circumstance = " ".join(_capital(sentence.format(**words)) for sentence in told)
    order = rng.randrange(3)
    if order == 0:
        return f"{persona} {description} {circumstance}"
    if order == 1:
        return f"{persona} {circumstance} {description}"
    return f"{circumstance} {description} {persona}"
