"""CronJob schedules as the API reads them (``cron.ParseStandard``'s grammar: five fields or a
descriptor such as ``@hourly``; a ``TZ=`` prefix refused, as v1.37 refuses it, in favour of the
``timeZone`` field), parsed by cronsim; the next scheduled time after a clock reading."""

from __future__ import annotations

import datetime as dt

import cronsim

from kubesched.clock import EPOCH

DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def parse_schedule(schedule: str) -> str:
    """The 5-field expression of a schedule (descriptors expanded); raises ValueError naming what is
    wrong (cron.ParseStandard's grammar; ``TZ=`` prefixes are refused as v1.37 refuses them)."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        raise ValueError("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    text = DESCRIPTORS.get(text, text)
    try:
        cronsim.CronSim(text, dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    except cronsim.CronSimError as exc:
        raise ValueError(str(exc)) from None
    return text


def zone_of(name: str | None) -> dt.tzinfo:
    if not name:
        return dt.UTC
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def next_after(schedule: str, zone: str | None, after: float) -> float:
    """The first scheduled time strictly after ``after`` (a clock reading: seconds since the
    clock's EPOCH), in the schedule's time zone."""
    start = (EPOCH + dt.timedelta(seconds=after)).astimezone(zone_of(zone))
    return (next(cronsim.CronSim(parse_schedule(schedule), start)) - EPOCH).total_seconds()
