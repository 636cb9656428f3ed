import { useState, type FormEvent } from 'react';
import { api, recentGames } from './api';
import { useMe } from './me';
import { useLoad } from './ui';

/**
 * The game switcher: a game id field suggesting the games used recently in this browser
 * (remembered in localStorage per person, newest first) and the service's games. Without a game chosen
 * yet, the games are listed to pick from instead of an empty field alone.
 */
export function GamePicker({ gameId, onPick }: { gameId: string; onPick: (gameId: string) => void }) {
  const [input, setInput] = useState(gameId);
  const games = useLoad(() => api.games(), []);
  const me = useMe();
  // An account limited to some games is offered only those.
  const recent = recentGames.list().filter((g) => !me?.games || me.games.includes(g));
  const known = (games.data?.data ?? []).filter((g) => !recent.includes(g.game_id));
  const pick = (id: string) => {
    const v = id.trim();
    if (!v) return;
    recentGames.use(v);
    onPick(v);
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    pick(input);
  };
  return (
    <>
      <form className="row" onSubmit={submit}>
        <input name="game_id" aria-label="Game id" placeholder="game id" list="game-choices" value={input} onChange={(e) => setInput(e.target.value)} />
        <datalist id="game-choices">
          {recent.map((id) => (
            <option key={id} value={id} />
          ))}
          {known.map((g) => (
            <option key={g.game_id} value={g.game_id}>
              {g.name}
            </option>
          ))}
        </datalist>
        <button type="submit" className="primary">
          Show
        </button>
      </form>
      {!gameId && (
        <div className="choices" data-testid="game-choices">
          {[...recent.map((id) => ({ game_id: id, name: 'recently used' })), ...known].map((g) => (
            <button key={g.game_id} type="button" onClick={() => pick(g.game_id)}>
              <span className="mono">{g.game_id}</span> <span className="muted">{g.name}</span>
            </button>
          ))}
          {games.data && !recent.length && !known.length && <p className="muted">No games yet: create one on the Games page.</p>}
        </div>
      )}
    </>
  );
}
