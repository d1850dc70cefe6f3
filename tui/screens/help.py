"""The help screen: what each screen is for and every key."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# coopcode

Two code models cooperate: the **helper** writes `aux` functions, the **main** agent writes
the function the problem asks for, free to call them. Every program runs in the sandbox.

| key | anywhere |
|---|---|
| F1 | this help (Esc closes) |
| ? | every key of the screen you are on (outside text fields) |
| F2 F3 F4 F5 | Agents · Collaborate · Train · Bench screens (from any widget, editors too) |
| / | search the problems (Collaborate's search box), outside text fields |
| Ctrl+P | command palette: every action by name |
| Ctrl+T | light / dark theme |
| Ctrl+Q | quit (asks whether to stop or detach running jobs) |
| Tab / Shift+Tab | move between fields |

**Agents (F2)**: the base model (catalog name, Hugging Face id or local folder) is loaded
once and shared; a trained run sets both agents' adapters (a pair's helper and main, or one
agent's), or each agent gets its own. Runs are found in `./checkpoints`, then in
`$COOPCODE_CHECKPOINTS`, then in the cache (`~/.cache/coopcode/checkpoints`); a run's name or
folder can be typed too. What the run was trained with (scheme, reward, what main sees)
becomes Collaborate's choice, and Bench and Train start from it.

| key | |
|---|---|
| Ctrl+R | load the chosen model and adapters (during a load: right after it) |
| Ctrl+L | look for runs again, and say what was found where |

**Collaborate (F3)**: pick a problem (HumanEval, or compose: two steps with a contract for
aux; type to search), open a `problem.py`, or type or paste a prompt in the editor; choose
the scheme and turns. Under `contract` and `plan` aux's contract sits between the agents'
panes (the problem's, or main's own as it writes it), and the verdict says what each agent
did on its own and whether both were needed.

| key | |
|---|---|
| Ctrl+R | run the agents (tokens stream side by side), then the tests; queued while they load |
| Esc | cancel the generation, or the run waiting for the agents |
| Ctrl+G | run the program (as edited) in the sandbox again (Ctrl+B too, outside tmux) |
| F7 F8 F9 | the Problem · Agents · Program tabs |
| type | the search box has the focus when the screen opens: typing searches at once |
| a letter in the list | search (the letters go to the search box); ↑ on the first: the box |
| Tab / Esc | leave the prompt editor (Esc leaves the program editor; Tab indents there) |
| Ctrl+O / Ctrl+N | open a problem file / start a new prompt |
| F6 / Ctrl+S | copy the program / save it to a file |

**Train (F4)**: a MAGRPO/GRPO run as a child process, with live reward, pass rate and loss.

| key | |
|---|---|
| Ctrl+R / Esc | start / stop the run (stopping saves a checkpoint) |

**Bench (F5)**: pass@k and acc@k over a problem set; earlier runs side by side.

| key | |
|---|---|
| Ctrl+R / Esc | start / stop the bench (rerun resumes it) |
| F7 F8 | the Live · Runs tabs |
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Markdown(HELP)
