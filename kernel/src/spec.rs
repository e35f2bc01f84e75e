//! The stable IDs of spec/: each rule, invariant and property is named by one, and code,
//! tests, traces and reports cite it by this type rather than by a string.

use crate::names::named;

named! {
    /// A stable spec ID, such as `RES-3`. Its name is the ID as spec/ writes it.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
    pub enum SpecId {
        /// `ID-1`.
        Id1 = "ID-1",
        /// `CLK-1`.
        Clk1 = "CLK-1",
        /// `INV-1`.
        Inv1 = "INV-1",
        /// `REV-1`.
        Rev1 = "REV-1",
        /// `AUD-1`.
        Aud1 = "AUD-1",
        /// `REJ-1`.
        Rej1 = "REJ-1",
        /// `REJ-2`.
        Rej2 = "REJ-2",
        /// `SUS-1`.
        Sus1 = "SUS-1",
        /// `SUS-2`.
        Sus2 = "SUS-2",
        /// `CKP-1`.
        Ckp1 = "CKP-1",
        /// `CKP-2`.
        Ckp2 = "CKP-2",
        /// `CKP-3`.
        Ckp3 = "CKP-3",
        /// `RES-1`.
        Res1 = "RES-1",
        /// `RES-2`.
        Res2 = "RES-2",
        /// `RES-3`.
        Res3 = "RES-3",
        /// `RES-4`.
        Res4 = "RES-4",
        /// `RES-5`.
        Res5 = "RES-5",
        /// `RES-6`.
        Res6 = "RES-6",
        /// `RES-7`.
        Res7 = "RES-7",
        /// `APR-1`.
        Apr1 = "APR-1",
        /// `APR-2`.
        Apr2 = "APR-2",
        /// `APR-3`.
        Apr3 = "APR-3",
        /// `APR-4`.
        Apr4 = "APR-4",
        /// `KEY-1`.
        Key1 = "KEY-1",
        /// `KEY-2`.
        Key2 = "KEY-2",
        /// `KEY-3`.
        Key3 = "KEY-3",
        /// `WAL-1`.
        Wal1 = "WAL-1",
        /// `WAL-2`.
        Wal2 = "WAL-2",
        /// `REC-1`.
        Rec1 = "REC-1",
        /// `REC-2`.
        Rec2 = "REC-2",
        /// `REC-3`.
        Rec3 = "REC-3",
        /// `REC-4`.
        Rec4 = "REC-4",
        /// `EXP-1`.
        Exp1 = "EXP-1",
        /// `CAN-1`.
        Can1 = "CAN-1",
        /// `CAN-2`.
        Can2 = "CAN-2",
        /// `BAT-1`.
        Bat1 = "BAT-1",
        /// `BAT-2`.
        Bat2 = "BAT-2",
        /// `BAT-3`.
        Bat3 = "BAT-3",
        /// `BAT-4`.
        Bat4 = "BAT-4",
        /// `BAT-5`.
        Bat5 = "BAT-5",
        /// `POL-1`.
        Pol1 = "POL-1",
        /// `EFF-1`.
        Eff1 = "EFF-1",
        /// `EFF-2`.
        Eff2 = "EFF-2",
        /// `LIVE-1`.
        Live1 = "LIVE-1",
        /// `LIVE-2`.
        Live2 = "LIVE-2",
        /// `CONF-1`.
        Conf1 = "CONF-1",
        /// `CLK-2`.
        Clk2 = "CLK-2",
        /// `APR-5`.
        Apr5 = "APR-5",
        /// `REC-5`.
        Rec5 = "REC-5",
        /// `REC-6`.
        Rec6 = "REC-6",
        /// `RES-8`.
        Res8 = "RES-8",
    }
}
