"""Visualise a rollout: record one world, then plot it, film it or watch it live.

* `recorder.Recorder`: a rollout observer storing one world's states, actuator outputs
  and reward terms (`orbitlab.envs.evaluate.rollout(observers=[...])`);
* `plots.save_plots`: PNG plots of a recording (matplotlib, Agg);
* `video.VideoRenderer`: an MP4 of a recording with MuJoCo's offscreen renderer, with the
  Hill axes, nadir and Sun direction drawn around the spacecraft (imageio-ffmpeg);
* `viewer.open_viewer`: a live viewer, MuJoCo's own window with a display, else a viser
  browser viewer.

Optional dependencies: `pip install 'orbitlab-sim[viz]'` (plots, video) and
`pip install 'orbitlab-sim[viser]'` (browser viewer). A missing piece raises
`VizUnavailable`, whose message says what to install.
"""

from __future__ import annotations


class VizUnavailable(RuntimeError):
    """A visualisation cannot run here (a missing package, no GL context); the message
    names the missing piece and how to get it."""
