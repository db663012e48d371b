"""A stand-in browser for ``$BROWSER``: follow the URL's redirects (to a loopback listener) with httpx.

``BROWSER="python follow_url.py %s"``: Python's webbrowser runs it with the URL, as it would a browser.
"""

import sys

import httpx

if __name__ == "__main__":
    response = httpx.get(sys.argv[1], follow_redirects=True, timeout=30)
    sys.exit(0 if response.status_code == 200 else 1)
