"""Hidden checks for tictactoe-logic: rules, turn order, outcomes and the move heuristic."""

import unittest

from tictactoe import Game, IllegalMove


class RulesTest(unittest.TestCase):
    def test_new_game(self):
        game = Game()
        self.assertEqual(game.to_rows(), ["...", "...", "..."])
        self.assertEqual(game.current_player, "X")
        self.assertEqual(game.status, "in_progress")
        self.assertIsNone(game.winner)
        self.assertEqual(len(game.legal_moves()), 9)

    def test_play_alternates_and_updates_board(self):
        game = Game()
        game.play(1, 1)
        self.assertEqual(game.current_player, "O")
        game.play(0, 2)
        self.assertEqual(game.to_rows(), ["..O", ".X.", "..."])
        self.assertEqual(game.current_player, "X")
        self.assertNotIn((1, 1), game.legal_moves())
        self.assertEqual(game.legal_moves()[:3], [(0, 0), (0, 1), (1, 0)])

    def test_illegal_moves_leave_the_game_unchanged(self):
        game = Game()
        game.play(0, 0)
        for row, col in [(0, 0), (3, 0), (0, -1)]:
            with self.subTest(cell=(row, col)), self.assertRaises(IllegalMove):
                game.play(row, col)
        self.assertEqual(game.to_rows(), ["X..", "...", "..."])
        self.assertEqual(game.current_player, "O")

    def test_wins_in_rows_columns_and_diagonals(self):
        cases = {
            ("XXX", "OO.", "..."): "X",
            ("XO.", "XO.", ".OX"): "O",
            ("X.O", ".XO", "..X"): "X",
            ("X.O", "XO.", "O.X"): "O",
        }
        for rows, winner in cases.items():
            with self.subTest(rows=rows):
                game = Game.from_rows(list(rows))
                self.assertEqual(game.winner, winner)
                self.assertEqual(game.status, f"{winner}_won")
                self.assertEqual(game.legal_moves(), [])
                with self.assertRaises(IllegalMove):
                    game.play(
                        *next((r, c) for r in range(3) for c in range(3) if rows[r][c] == ".")
                    )

    def test_draw(self):
        game = Game.from_rows(["XOX", "XOO", "OX."])
        self.assertEqual(game.current_player, "X")
        game.play(2, 2)
        self.assertEqual(game.status, "draw")
        self.assertIsNone(game.winner)

    def test_from_rows_rejects_bad_boards(self):
        for rows in (
            ["XO", "...", "..."],
            ["XA.", "...", "..."],
            ["OO.", "...", "..."],
            ["XXX", "X..", "..."],
            ["...", "..."],
        ):
            with self.subTest(rows=rows), self.assertRaises(ValueError):
                Game.from_rows(rows)


class BestMoveTest(unittest.TestCase):
    def test_takes_a_win_before_blocking(self):
        game = Game.from_rows(["XX.", "OO.", "..."])
        self.assertEqual(game.best_move(), (0, 2))

    def test_blocks_the_opponent(self):
        game = Game.from_rows(["X..", "OO.", "X.."])
        self.assertEqual(game.current_player, "X")
        self.assertEqual(game.best_move(), (1, 2))

    def test_centre_then_corners_then_first_free(self):
        self.assertEqual(Game().best_move(), (1, 1))
        self.assertEqual(Game.from_rows(["...", ".X.", "..."]).best_move(), (0, 0))
        self.assertEqual(Game.from_rows(["O.X", ".X.", "..."]).best_move(), (2, 0))
        game = Game.from_rows(["XOX", ".X.", "OXO"])
        self.assertEqual(game.best_move(), (1, 0))
        self.assertEqual(Game.from_rows(["XOX", "XOO", "OX."]).best_move(), (2, 2))

    def test_best_move_on_a_finished_game_raises(self):
        with self.assertRaises(IllegalMove):
            Game.from_rows(["XXX", "OO.", "..."]).best_move()
