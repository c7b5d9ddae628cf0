"""CronJob schedules as the API reads them (``cron.ParseStandard``'s grammar: five fields or a
descriptor such as ``@hourly``; a ``TZ=`` prefix refused, as v1.37 refuses it, in favour of the
``timeZone`` field), parsed by cronsim; the next scheduled time after a clock reading."""

from __future__ import annotations

import datetime as dt
import math
import re

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
    fields = text.split()
    if len(fields) != 5:  # ParseStandard: minute, hour, day of month, month, day of week
        raise ValueError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for expr in fields[2].split(","):  # robfig/cron's getRange words for a day out of 1-31
        bounds = [int(d) for d in re.findall(r"\d+", expr.split("/")[0])]
        if bounds and bounds[0] < 1:
            raise ValueError(f"beginning of range ({bounds[0]}) below minimum (1): {expr}")
        if bounds and bounds[-1] > 31:
            raise ValueError(f"end of range ({bounds[-1]}) above maximum (31): {expr}")
    try:
        cronsim.CronSim(text, dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    except cronsim.CronSimError as exc:
        # a day no month it names has (``0 0 30 2 *``) is a schedule robfig/cron accepts that
        # never fires; cronsim refuses it: the other fields are checked with another day
        days = [int(d) for d in re.findall(r"(?<![/\d])\d+", fields[2])]  # (not the steps)
        if (
            str(exc) != "Bad day-of-month"
            or not all(1 <= d <= 31 for d in days)
            or _refused(" ".join([*fields[:2], "1", *fields[3:]]))
        ):
            raise ValueError(str(exc)) from None
    return text


def _refused(text: str) -> bool:
    try:
        cronsim.CronSim(text, dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    except cronsim.CronSimError:
        return True
    return False


def zone_of(name: str | None) -> dt.tzinfo:
    if not name:
        return dt.UTC
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def next_after(schedule: str, zone: str | None, after: float) -> float:
    """The first scheduled time strictly after ``after`` (a clock reading: seconds since the
    clock's EPOCH), in the schedule's time zone."""
    start = (EPOCH + dt.timedelta(seconds=after)).astimezone(zone_of(zone))
    try:
        return (next(cronsim.CronSim(parse_schedule(schedule), start)) - EPOCH).total_seconds()
    except cronsim.CronSimError:
        return math.inf  # a day no month it names has: never
