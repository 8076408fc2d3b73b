"""Running memsync as a service (``memsync service``; the CLI is ``daemon/cli/setup/service.py``).

- ``spec``: ServiceSpec, everything a service file says, and where each file goes.
- ``systemd``, ``launchd``, ``render``: the unit or plist for a spec; pure, no I/O.
- ``loading``: the settings for a service command, with the site's env file as the service sees it.
- ``commands``, ``files``: running systemctl/loginctl/launchctl from PATH; writing the files.
- ``install``, ``status``: install/uninstall, and how an installed service is doing.
"""
