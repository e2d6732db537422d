//! The renderer draws known states with the right colours where walls, agents and items are
//! (offscreen, on lavapipe in CI), and `gridarena render` writes a GIF and PNG frames.

use std::path::Path;

use gridarena::layout::Layout;
#[cfg(feature = "gpu")]
use gridarena::render::gpu::Offscreen;
use gridarena::render::scene::extract;
use gridarena::render::scene::{FLOOR, Scene, TOKEN, WALL, palette};
use gridarena::rollout::Frame;
use gridarena::scenario::Scenario;

#[path = "common/skip.rs"]
mod skip;

/// The offscreen GPU renderer, or `None` after a recorded skip when no adapter exists; an
/// error building it on an adapter that exists fails the test.
#[cfg(feature = "gpu")]
fn offscreen() -> Option<Offscreen> {
    if !skip::gpu_adapter_present() {
        return None;
    }
    Some(Offscreen::new().unwrap_or_else(|e| panic!("building the offscreen renderer: {e}")))
}

fn frame(positions: Vec<(i16, i16)>, facing: Vec<u8>, items: Vec<u8>) -> Frame {
    let n = positions.len();
    Frame {
        t: 0,
        episode: 0,
        alive: vec![true; n],
        positions,
        facing,
        carry: Vec::new(),
        items,
        actions: Vec::new(),
        rewards: Vec::new(),
        terminated: false,
        truncated: false,
    }
}

/// The RGB at the centre of cell (x, y).
fn at(rgba: &[u8], width: u32, cell: u32, x: u32, y: u32, dx: u32, dy: u32) -> [u8; 3] {
    let (px, py) = (x * cell + dx, y * cell + dy);
    let i = ((py * width + px) * 4) as usize;
    [rgba[i], rgba[i + 1], rgba[i + 2]]
}

/// A renderer under test: scene and pixels per cell to `(width, height, RGBA)`.
type Render<'a> = &'a mut dyn FnMut(&Scene, u32) -> (u32, u32, Vec<u8>);

#[cfg(feature = "gpu")]
#[test]
fn walls_agents_and_items_have_their_colours_at_their_cells() {
    let Some(mut gpu) = offscreen() else {
        return;
    };
    check_colours(&mut |s, c| gpu.render(s, c).unwrap());
}

#[test]
fn the_cpu_rasterizer_draws_the_same_colours_at_the_same_places() {
    check_colours(&mut |s, c| gridarena::render::cpu::render(s, c));
}

#[cfg(feature = "gpu")]
#[test]
fn the_cpu_rasterizer_matches_the_gpu_renderer_pixel_for_pixel_but_edges() {
    let Some(mut gpu) = offscreen() else {
        return;
    };
    let loaded = Scenario::load(Path::new("assets/scenarios/gift_refinements.ron")).unwrap();
    let layout = Layout::derive(&loaded);
    let positions = vec![(5, 5), (6, 5), (7, 5), (8, 5), (9, 5), (10, 5)];
    let f = frame(
        positions,
        vec![0, 1, 2, 3, 0, 1],
        vec![0; layout.width * layout.height],
    );
    let scene = extract(&layout, &f, Some(2));
    for cell in [7, 16, 33] {
        let (w, h, g) = gpu.render(&scene, cell).unwrap();
        let (cw, ch, c) = gridarena::render::cpu::render(&scene, cell);
        assert_eq!((w, h), (cw, ch));
        let differ = g.chunks(4).zip(c.chunks(4)).filter(|(a, b)| a != b).count();
        let share = differ as f64 / (w * h) as f64;
        assert!(
            share < 0.005,
            "cell {cell}: {differ} of {} pixels differ",
            w * h
        );
    }
}

/// Checks a renderer on known states: walls, floor, agents, a token and facings.
fn check_colours(render: Render) {
    let cell = 16;
    // pursuit_3: 7x7, obstacles at (1,1), (5,1), (3,3), (1,5), (5,5); 2 pursuers, 1 evader.
    let loaded = Scenario::load(Path::new("assets/scenarios/pursuit_3.ron")).unwrap();
    let layout = Layout::derive(&loaded);
    let colors = palette(&layout);
    assert_ne!(colors[0], colors[1], "each agent its own colour");
    assert_ne!(colors[0], colors[2]);
    let f = frame(vec![(0, 0), (6, 6), (2, 4)], Vec::new(), Vec::new());
    let (w, h, rgba) = render(&extract(&layout, &f, None), cell);
    assert_eq!((w, h), (7 * cell, 7 * cell));
    let c = cell / 2;
    assert_eq!(at(&rgba, w, cell, 3, 3, c, c), WALL, "obstacle");
    assert_eq!(at(&rgba, w, cell, 1, 5, c, c), WALL, "obstacle");
    assert_eq!(at(&rgba, w, cell, 4, 0, c, c), FLOOR, "free cell");
    assert_eq!(at(&rgba, w, cell, 0, 0, c, c), colors[0], "pursuer 0");
    assert_eq!(at(&rgba, w, cell, 6, 6, c, c), colors[1], "pursuer 1");
    assert_eq!(at(&rgba, w, cell, 2, 4, c, c), colors[2], "evader");
    // Agents are discs: the cell's corner shows the floor.
    assert_eq!(at(&rgba, w, cell, 0, 0, 1, 1), FLOOR, "disc, not square");

    // gift_refinements: a token item and a facing triangle.
    let loaded = Scenario::load(Path::new("assets/scenarios/gift_refinements.ron")).unwrap();
    let layout = Layout::derive(&loaded);
    let colors = palette(&layout);
    let mut items = vec![0u8; layout.width * layout.height];
    items[2 * layout.width + 3] = 1; // token at (3, 2)
    let positions = vec![(5, 5), (6, 5), (7, 5), (8, 5), (9, 5), (10, 5)];
    let f = frame(positions, vec![0, 1, 2, 3, 0, 0], items);
    let (w, _, rgba) = render(&extract(&layout, &f, Some(1)), cell);
    assert_eq!(at(&rgba, w, cell, 3, 2, c, c), TOKEN, "token");
    assert_eq!(at(&rgba, w, cell, 0, 0, c, c), WALL, "border wall");
    // Agent 0 faces north: the triangle sits above the centre, the disc colour below it.
    assert_eq!(
        at(&rgba, w, cell, 10, 5, c, c + 4),
        colors[5],
        "agent 5 body"
    );
    let tip = at(&rgba, w, cell, 5, 5, c, c - 4);
    assert!(
        tip.iter().all(|v| *v < 60),
        "facing marker above agent 0: {tip:?}"
    );
    let below = at(&rgba, w, cell, 5, 5, c, c + 5);
    assert_eq!(below, colors[0], "agent 0 body below the marker");
    // Agent 1 (selected) faces east: marker to the right of its centre.
    let right = at(&rgba, w, cell, 6, 5, c + 4, c);
    assert!(right.iter().all(|v| *v < 60), "east marker: {right:?}");
}

#[cfg(feature = "gpu")]
#[test]
fn render_writes_a_gif_and_png_frames_of_a_rollout() {
    if offscreen().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("gridarena-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = env!("CARGO_BIN_EXE_gridarena");
    let rollout = dir.join("r.ron");
    let ok = std::process::Command::new(bin)
        .args([
            "rollout",
            "--scenario",
            "assets/scenarios/pursuit.ron",
            "--seed",
            "2",
            "--steps",
            "30",
            "--out",
        ])
        .arg(&rollout)
        .status()
        .unwrap();
    assert!(ok.success());
    let gif = dir.join("r.gif");
    let out = std::process::Command::new(bin)
        .arg("render")
        .arg(&rollout)
        .arg("--out")
        .arg(&gif)
        .args(["--cell", "8"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("rendered 31 frames of 128x128 px"), "{text}");
    let bytes = std::fs::read(&gif).unwrap();
    assert_eq!(&bytes[..6], b"GIF89a");
    let mut decoder = gif::DecodeOptions::new();
    decoder.set_color_output(gif::ColorOutput::RGBA);
    let mut d = decoder
        .read_info(std::fs::File::open(&gif).unwrap())
        .unwrap();
    let mut frames = 0;
    while d.read_next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 31);
    let pngs = dir.join("frames");
    let ok = std::process::Command::new(bin)
        .arg("render")
        .arg(&rollout)
        .arg("--out")
        .arg(&pngs)
        .args(["--frames", "4"])
        .status()
        .unwrap();
    assert!(ok.success());
    assert!(pngs.join("frame_00003.png").exists() && !pngs.join("frame_00004.png").exists());
    // An unreadable rollout is refused with the path.
    let bad = dir.join("bad.ron");
    std::fs::write(&bad, "not a rollout").unwrap();
    let out = std::process::Command::new(bin)
        .arg("render")
        .arg(&bad)
        .arg("--out")
        .arg(dir.join("x.gif"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.ron"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_render_system_extracts_the_watched_arena_after_every_step() {
    let loaded = Scenario::load(Path::new("assets/scenarios/pursuit_3.ron")).unwrap();
    let mut batch = gridarena::engine::EnvBatch::new(&loaded, 4, 9).unwrap();
    assert!(batch.render_scene().is_none(), "off unless watched");
    batch.watch_render(2, Some(1));
    let layout = batch.layout().clone();
    let mut policy = gridarena::policy::RandomPolicy::new(3, 4, layout.actions);
    let mut moved = 0;
    for _ in 0..20 {
        let before = batch.render_scene().unwrap().clone();
        policy.act(batch.actions_mut());
        batch.step().unwrap();
        let scene = batch.render_scene().unwrap().clone();
        let want = extract(&layout, &batch.snapshot(2), Some(1));
        assert_eq!(
            scene, want,
            "the system's scene is the extraction of arena 2"
        );
        moved += usize::from(scene != before);
    }
    assert!(
        moved > 10,
        "the scene follows the arena ({moved} of 20 steps changed it)"
    );
    batch.stop_render();
    let frozen = batch.render_scene().unwrap().clone();
    policy.act(batch.actions_mut());
    batch.step().unwrap();
    assert_eq!(
        batch.render_scene().unwrap(),
        &frozen,
        "stopped: no more extraction"
    );
}

/// `GRIDARENA_RENDER=cpu` (and a machine with no adapter) renders with the CPU rasterizer:
/// the same GIF frames as the GPU renderer, reported as drawn on `cpu`.
#[test]
fn render_falls_back_to_the_cpu_rasterizer() {
    let dir = std::env::temp_dir().join(format!("gridarena-render-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = env!("CARGO_BIN_EXE_gridarena");
    let rollout = dir.join("r.ron");
    let ok = std::process::Command::new(bin)
        .args([
            "rollout",
            "--scenario",
            "assets/scenarios/pursuit_3.ron",
            "--steps",
            "5",
            "--out",
        ])
        .arg(&rollout)
        .status()
        .unwrap();
    assert!(ok.success());
    // Renders the rollout with `GRIDARENA_RENDER` set to `backend` (unset for `None`): the
    // report line and the decoded RGBA frames.
    let render = |backend: Option<&str>| {
        let gif = dir.join(format!("r-{}.gif", backend.unwrap_or("default")));
        let mut cmd = std::process::Command::new(bin);
        match backend {
            Some(b) => cmd.env("GRIDARENA_RENDER", b),
            None => cmd.env_remove("GRIDARENA_RENDER"),
        };
        let out = cmd
            .arg("render")
            .arg(&rollout)
            .arg("--out")
            .arg(&gif)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            gif_frames(&gif),
        )
    };
    let (text, cpu) = render(Some("cpu"));
    assert!(
        text.contains("rendered 6 frames") && text.contains("on cpu"),
        "{text}"
    );
    assert_eq!(cpu.len(), 6, "frames decoded from the CPU's GIF");
    #[cfg(feature = "gpu")]
    if offscreen().is_some() {
        let (text, gpu) = render(None);
        assert!(
            !text.contains("on cpu"),
            "the default renders on the GPU: {text}"
        );
        assert_eq!(gpu.len(), cpu.len(), "frames");
        for (k, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
            assert_eq!(g.len(), c.len(), "frame {k}: size");
            // Anti-aliased edges may round differently; every cell centre must agree.
            let differ = g.chunks(4).zip(c.chunks(4)).filter(|(a, b)| a != b).count();
            assert!(
                differ * 200 < g.len() / 4,
                "frame {k}: {differ} of {} pixels differ between cpu and gpu",
                g.len() / 4
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Every frame of a GIF, as RGBA bytes (each frame composed onto the full canvas).
fn gif_frames(path: &Path) -> Vec<Vec<u8>> {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = options
        .read_info(std::fs::File::open(path).unwrap())
        .unwrap();
    let (w, h) = (decoder.width() as usize, decoder.height() as usize);
    let mut frames = Vec::new();
    let mut canvas = vec![0u8; w * h * 4];
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        let (fx, fy, fw) = (
            frame.left as usize,
            frame.top as usize,
            frame.width as usize,
        );
        for (row, line) in frame.buffer.chunks(fw * 4).enumerate() {
            let at = ((fy + row) * w + fx) * 4;
            canvas[at..at + fw * 4].copy_from_slice(line);
        }
        frames.push(canvas.clone());
    }
    frames
}
