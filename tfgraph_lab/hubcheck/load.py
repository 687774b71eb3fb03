"""N simulated learners on a JupyterHub at the same time, then everything they started removed.

:func:`run_check` is ``tfgraph-lab workshop check``'s engine: with an admin token it checks the
token can do what the check needs, creates N users with a name no one has
(``tfgl-check-RUNID-K``), runs :func:`~tfgraph_lab.hubcheck.learner.run_learner` for all of them
at once (a class that logs in at the start of a workshop), samples the learners' processes with
psutil when the hub runs on this machine, and in all cases stops the servers and deletes the
users it created. Interrupted (Ctrl-C) while the learners run, it still cleans up; interrupted
while it cleans up, it stops there and :class:`CheckInterrupted` names what is left on the hub.
Imports nothing of TensorFlow or IPython.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..model.errors import UsageProblem
from .bounds import MAX_LEARNERS
from .learner import LearnerResult, run_learner
from .rest import HubAPI, HubError

__all__ = ["CheckInterrupted", "CheckResult", "run_check"]

USER_PREFIX = "tfgl-check"
# What the check does with the admin token, and the scope each needs (JupyterHub 2+ scopes; the
# admin role has all of them).
_NEEDED = {
    "admin:users": "create and delete the check's users",
    "tokens": "log the learners in (a token for each)",
    "servers": "stop the learners' servers",
}


@dataclass
class CheckResult:
    """What one check saw: the hub, each learner's result, the psutil sampler (``None`` when the
    hub's processes are not on this machine), the seconds it took, and what cleaning up met."""

    hub_url: str
    hub_version: str
    notebooks: list[str]
    learners: list[LearnerResult] = field(default_factory=list)
    sampler: Any = None
    seconds: float = 0.0
    cleanup_problems: list[str] = field(default_factory=list)
    removed_users: int = 0
    #: The check's users not deleted yet, and those whose server was not seen stopped (every
    #: user the check makes is in both until cleaning up says otherwise).
    users_left: list[str] = field(default_factory=list)
    servers_left: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.learners) and all(learner.passed for learner in self.learners)


def _missing_scopes(scopes: list[str]) -> list[str]:
    have = {scope.split("!", 1)[0] for scope in scopes}
    if "admin:users" in have:  # JupyterHub 1.x admins have no scope list; 2+ list them
        have |= {"users"}
    return [scope for scope in _NEEDED if scope not in have and f"admin:{scope}" not in have]


def check_token(admin: HubAPI) -> dict[str, Any]:
    """The token's owner; :class:`UsageProblem` when the token cannot do what the check needs."""
    try:
        me = admin.whoami()
    except HubError as exc:
        raise UsageProblem(f"the hub did not accept the token ({exc}); give an admin's API token") from exc
    missing = _missing_scopes(list(me.get("scopes") or []))
    if missing:
        needs = "; ".join(f"{scope} (to {_NEEDED[scope]})" for scope in missing)
        raise UsageProblem(
            f"the token of {me.get('kind', 'user')} {me.get('name')!r} lacks {needs}. Use an admin's "
            "token: as an admin, open HUB/hub/token and request a token (its scopes inherit the "
            "admin's), or give a service the admin role in the hub's configuration."
        )
    return me


def _on_loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


class CheckInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the check; ``users_left`` and ``servers_left`` are what it made that is
    still on the hub (servers: not seen stopped), by name; both empty when it cleaned up."""

    def __init__(self, users_left: list[str], servers_left: list[str]) -> None:
        super().__init__(users_left, servers_left)
        self.users_left = list(users_left)
        self.servers_left = list(servers_left)

    def said(self) -> str:
        """What is left, in one sentence for the teacher."""
        if not self.users_left and not self.servers_left:
            return "the users and servers it made were removed"
        parts = []
        if self.servers_left:
            parts.append(f"{len(self.servers_left)} servers may still run ({', '.join(self.servers_left)})")
        if self.users_left:
            parts.append(f"{len(self.users_left)} users remain ({', '.join(self.users_left)})")
        return "cleaning up was interrupted: " + "; ".join(parts) + "; delete them as an admin on the hub"


def _cleanup(admin: HubAPI, names: list[str], result: CheckResult, timeout: float) -> None:
    """Stop every server and delete every user, keeping ``result.users_left`` and
    ``servers_left`` true at every moment (a Ctrl-C may land anywhere in here)."""
    for name in names:
        try:
            admin.stop_server(name)
        except HubError:
            pass  # no server, or already stopping
    for name in names:
        if admin.wait_stopped(name, timeout):
            result.servers_left.remove(name)
        else:
            result.cleanup_problems.append(f"{name}'s server had not stopped after {timeout:.0f} s")
        try:
            admin.delete_user(name)
        except HubError as exc:
            result.cleanup_problems.append(str(exc))
            continue
        result.removed_users += 1
        result.users_left.remove(name)
        if name in result.servers_left:  # deleting a user removes its server
            result.servers_left.remove(name)


def run_check(
    hub_url: str,
    token: str,
    notebooks: dict[str, dict[str, Any]],
    *,
    learners: int = 8,
    start_timeout: float = 300.0,
    cell_timeout: float = 300.0,
    sample: bool | None = None,
    stagger: float = 0.0,
) -> CheckResult:
    """Run ``learners`` simulated learners through ``notebooks`` (file name → notebook) on the
    hub, all at once (``stagger`` seconds between logins), and remove what they started.
    ``sample``: psutil on the learners' processes (default: when the hub is on loopback)."""
    if learners < 1:
        raise UsageProblem(f"--learners {learners}: give 1 or more")
    if learners > MAX_LEARNERS:
        raise UsageProblem(f"--learners {learners}: at most {MAX_LEARNERS} learners in one check")
    if not notebooks:
        raise UsageProblem("no notebooks to run")
    admin = HubAPI(hub_url, token)
    try:
        version = str(admin.info().get("version", "?"))
    except HubError as exc:
        raise UsageProblem(f"no JupyterHub API at {admin.url}/hub/api/ ({exc})") from exc
    check_token(admin)
    result = CheckResult(admin.url, version, list(notebooks))
    sampler = None
    if sample if sample is not None else _on_loopback(admin.url):
        from .sampler import ProcessSampler

        sampler = ProcessSampler().start()
        result.sampler = sampler
    run_id = secrets.token_hex(3)
    names = [f"{USER_PREFIX}-{run_id}-{k + 1}" for k in range(learners)]
    begun = time.monotonic()
    result.users_left, result.servers_left = list(names), list(names)  # from the moment they may exist
    interrupted: KeyboardInterrupt | None = None
    try:
        admin.create_users(names)
        slots: list[LearnerResult | None] = [None] * learners

        def work(k: int) -> None:
            slots[k] = run_learner(
                admin,
                names[k],
                notebooks,
                start_timeout=start_timeout,
                cell_timeout=cell_timeout,
                on_server=sampler.add if sampler is not None else None,
            )

        threads = [
            threading.Thread(target=work, args=(k,), name=names[k], daemon=True) for k in range(learners)
        ]
        for thread in threads:
            thread.start()
            if stagger:
                time.sleep(stagger)
        for thread in threads:
            thread.join()
        result.learners = [
            slot or LearnerResult(names[k], problems=["no result"]) for k, slot in enumerate(slots)
        ]
    except KeyboardInterrupt as exc:  # Ctrl-C while the learners run: clean up, then say so
        interrupted = exc
    finally:
        result.seconds = time.monotonic() - begun
        if sampler is not None:
            sampler.stop()
        try:
            _cleanup(admin, names, result, timeout=start_timeout)
        except KeyboardInterrupt:  # Ctrl-C while cleaning up: stop, and say what is left
            raise CheckInterrupted(result.users_left, result.servers_left) from None
    if interrupted is not None:
        raise CheckInterrupted(result.users_left, result.servers_left) from interrupted
    return result
